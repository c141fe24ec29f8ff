package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/hostguard"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport"
)

// DefaultMirrorListen is where 'ampbundle serve' listens by default.
const DefaultMirrorListen = "127.0.0.1:8470"

func serveCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "serve the store read-only over HTTP: a mirror for 'ampbundle sync'",
		Description: `Serves the bundles installed in the store DB, read-only, on --listen:
the signed bundle files byte for byte (/bundles/BUNDLE_ID), the RFC 004 §5.1
paths of every capability (/cap-registry/NAME/VERSION/descriptor.cbor,
descriptor.json, input.schema.json, output.schema.json), an index with the
generation and hashes (/index.json) and the capabilities document
(/.well-known/ampbundle-registry.json). docs/FORMAT.md specifies them.

The mirror opens the store read-only only while it takes a snapshot (at start,
then when the store generation changes, checked every --refresh), so imports
on the station keep working; when a running agent holds the store, the mirror
reads it through the agent's admin socket, asking it for the store
generation at every --refresh, so each commit of the agent is served at the
next refresh. Bundle files are re-created from the store with every artifact
hash checked, into the --spool folder.

The read-only HTML catalog of the store (bundles, capabilities, schemas,
compatibility matrices, trust) is served under /ui/ unless --catalog=false.

GET /healthz answers while the process runs; GET /readyz is 200 when a
snapshot is served, the last refresh read the store and the store check
finds nothing, 503 otherwise (JSON either way). --metrics-listen serves
Prometheus metrics on GET /metrics, on a listener of its own.

Loopback only unless --tls-cert/--tls-key are given or --unsafe-listen says
plain HTTP on the network is intended. On a connection that arrived on a
loopback address every path answers only a Host header naming localhost, a
loopback IP address or an --allow-host name (421 otherwise: DNS rebinding);
the metrics listener, on any connection, answers only localhost, an
--allow-host name or an IP address (a loopback one on loopback).
SIGINT or SIGTERM stops it.`,
		Flags: []cli.Flag{
			dbFlag,
			adminSocketFlag,
			&cli.StringFlag{Name: "listen", Value: DefaultMirrorListen, Usage: "`ADDR` to listen on"},
			&cli.BoolFlag{Name: "unsafe-listen", Usage: "allow plain HTTP on a non-loopback address"},
			&cli.StringFlag{Name: "tls-cert", Usage: "TLS certificate chain `PEM` (with --tls-key)"},
			&cli.StringFlag{Name: "tls-key", Usage: "TLS private key `PEM` (with --tls-cert)"},
			&cli.StringFlag{Name: "spool", Usage: "`DIR` for the bundle files served (default: a folder of its own in DB.mirror/, removed on exit, and at the next start when killed)"},
			&cli.DurationFlag{Name: "refresh", Value: mirror.DefaultRefresh, Usage: "look for a new store generation every `DURATION`"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus metrics on GET /metrics at `ADDR`, a listener of its own (default: no metrics listener)"},
			&cli.DurationFlag{Name: "ready-recheck", Value: mirror.DefaultReadyRecheck, Usage: "/readyz re-runs the store check at least every `DURATION` (and whenever the served generation changes)"},
			&cli.IntFlag{Name: "max-in-flight", Value: mirror.DefaultMaxInFlight, Usage: "serve at most `N` requests at once; more get 503 overloaded"},
			&cli.IntFlag{Name: "max-conns", Value: 1024, Usage: "keep at most `N` connections open at once; more wait in the backlog"},
			&cli.IntFlag{Name: "peer-share", Value: 4, Usage: "one address (an IPv6 /48) holds at most 1/`N` of the connections and of the requests in flight; 1 behind a proxy, where every client is one address"},
			&cli.BoolFlag{Name: "catalog", Value: true, Usage: "serve the read-only HTML catalog of the store under /ui/ (--catalog=false: not)"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "also answer a request whose Host header names `NAME` on a loopback connection, and on the metrics listener (repeatable; default: only localhost and IP addresses, loopback ones on loopback): the name of a proxy in front, refused otherwise against DNS rebinding"},
			&cli.Int64Flag{Name: "min-rate", Usage: fmt.Sprintf("a client must read each answer at `BYTES` per second at least, after %v, or it is cut off (default %d, 1 Mbit/s; at least %d): lower it for sites that sync over a slower link", admission.FrameGrace, admission.MinDataRate, minRateFloor)},
			cliutil.LogRateFlag(),
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db"); err != nil {
				return err
			}
			return runMirror(c.Context, env, c)
		},
	}
}

// runMirror runs 'ampbundle serve' until a signal, the end of ctx or a
// server failure: every flag is checked, the store opened and every
// listener opened before anything is served or printed, or any spool
// folder made or swept (startMirror), so that a bad flag, store or address
// fails the command with nothing started, made or removed.
func runMirror(ctx context.Context, env *cliutil.Env, c *cli.Context) error {
	tlsCfg, err := checkMirrorFlags(c)
	if err != nil {
		return err
	}
	hosts, err := hostguard.New(c.StringSlice("allow-host"))
	if err != nil {
		return cliutil.Usagef("--allow-host: %s", amp.SafeMessage(err))
	}
	lh, err := cliutil.ThrottleLog(c, slog.NewTextHandler(env.Stderr, nil))
	if err != nil {
		return err
	}
	log := slog.New(lh)
	db := c.String("db")
	open := mirrorOpener(env, db, c.String("admin-socket"))
	m, lns, removeSpool, err := startMirror(c, env, open, tlsCfg, log)
	if err != nil {
		return err
	}
	defer removeSpool()
	handler, err := mirrorHandler(c, env, log, m, open)
	if err != nil {
		lns.close()
		return err
	}
	// Before any route reads the store (CATALOG-20); the refusal under
	// the mirror's script-free policy (MIRROR-7).
	srv := mirror.NewHTTPServer(mirror.ScriptFree(hosts.OnLoopbackOnly().Wrap(handler)), 0, log)
	rctx, stop := context.WithCancel(ctx)
	defer stop()
	go m.Run(rctx)
	// Signals are taken before the start is printed: a SIGTERM as soon as
	// the listening line appears is a graceful stop.
	sigs, stopSignals := env.StopSignals()
	defer stopSignals()
	errs := make(chan error, 2)
	go func() { errs <- srv.Serve(lns.main) }()
	url := lns.scheme + "://" + lns.main.Addr().String()
	startDoc := map[string]any{"listening": url, "generation": m.Generation()}
	metricsSrv, metricsURL := serveMirrorMetrics(m, hosts, lns.metrics, errs)
	if metricsURL != "" {
		startDoc["metrics"] = metricsURL
	}
	log.Info("mirror serving", "url", url, "generation", m.Generation(), "metrics", metricsURL)
	if c.Bool("json") {
		cliutil.PrintJSON(env.Stdout, startDoc)
	} else {
		fmt.Fprintf(env.Stdout, "serving %s read-only on %s (generation %d)\n", cliutil.Sanitize(db), cliutil.Sanitize(url), m.Generation())
		if metricsURL != "" {
			fmt.Fprintf(env.Stdout, "metrics on %s\n", cliutil.Sanitize(metricsURL))
		}
	}
	runErr := waitMirror(ctx, log, sigs, errs)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("graceful shutdown incomplete", "err", err)
	}
	if metricsSrv != nil {
		metricsSrv.Shutdown(sctx)
	}
	cliutil.FlushLog(context.Background(), log)
	return runErr
}

// checkMirrorFlags refuses what 'ampbundle serve' must not start with
// (half a TLS pair, limits under 1, a --min-rate under minRateFloor,
// plain HTTP or metrics reachable from the network unasked) and loads
// the TLS configuration, nil for plain HTTP.
func checkMirrorFlags(c *cli.Context) (*tls.Config, error) {
	listen, cert, key := c.String("listen"), c.String("tls-cert"), c.String("tls-key")
	if (cert == "") != (key == "") {
		return nil, cliutil.Usagef("give both --tls-cert and --tls-key, or neither")
	}
	if c.Int("max-conns") < 1 {
		return nil, cliutil.Usagef("--max-conns must be at least 1")
	}
	if c.Int("peer-share") < 1 {
		return nil, cliutil.Usagef("--peer-share must be at least 1")
	}
	if _, err := minRate(c); err != nil {
		return nil, err
	}
	if cert == "" && !cliutil.Loopback(listen) && !c.Bool("unsafe-listen") {
		return nil, cliutil.WithHint(cliutil.Failf("unsafe_listen", "the listen address is not a loopback address: plain http would be reachable from the network"),
			"listen on 127.0.0.1, give --tls-cert and --tls-key, or say --unsafe-listen")
	}
	metricsListen := c.String("metrics-listen")
	if metricsListen != "" && !cliutil.Loopback(metricsListen) && !c.Bool("unsafe-listen") {
		return nil, cliutil.WithHint(cliutil.Failf("unsafe_listen", "the metrics listen address is not a loopback address: the metrics would be reachable from the network"),
			"give --metrics-listen a loopback address, or say --unsafe-listen")
	}
	if cert == "" {
		return nil, nil
	}
	return cliutil.ServerTLSNamed(cert, key, "--tls-cert file", "--tls-key file")
}

// startMirror starts what 'ampbundle serve' serves, each step only once
// those before it passed: the store's first open (through open), the
// listeners, the spool folder (mirrorSpool: DB.mirror/run-N made, the
// folders of ended serves removed) and the mirror, whose first snapshot
// reads the store so opened. A typo'd --db, an unreadable store or an
// address in use fails before anything is made or removed on disk
// (docs/SPEC-DECISIONS.md MIRROR-35). On success, removeSpool removes the
// spool folder when the serve ends.
func startMirror(c *cli.Context, env *cliutil.Env, open func() (mirror.Source, error), tlsCfg *tls.Config, log *slog.Logger) (m *mirror.Server, lns mirrorListeners, removeSpool func(), err error) {
	first, err := open()
	if err != nil {
		return nil, mirrorListeners{}, nil, err
	}
	openFirst, drop := handOver(first, open)
	defer drop()
	if lns, err = listenMirror(c, tlsCfg); err != nil {
		return nil, mirrorListeners{}, nil, err
	}
	spool, removeSpool, err := mirrorSpool(c.String("spool"), c.String("db"))
	if err != nil {
		lns.close()
		return nil, mirrorListeners{}, nil, err
	}
	if m, err = mirror.New(mirrorOptions(c, env, openFirst, spool, log)); err != nil {
		removeSpool()
		lns.close()
		return nil, mirrorListeners{}, nil, err
	}
	return m, lns, removeSpool, nil
}

// handOver returns an opener whose first call hands over src, a store
// opened already, and whose later calls open anew (open); drop closes src
// when no call took it.
func handOver(src mirror.Source, open func() (mirror.Source, error)) (opener func() (mirror.Source, error), drop func()) {
	var mu sync.Mutex
	take := func() mirror.Source {
		mu.Lock()
		defer mu.Unlock()
		s := src
		src = nil
		return s
	}
	opener = func() (mirror.Source, error) {
		if s := take(); s != nil {
			return s, nil
		}
		return open()
	}
	drop = func() {
		if s := take(); s != nil {
			s.Close()
		}
	}
	return opener, drop
}

// mirrorOptions are the mirror's options of serve's flags (checked by
// checkMirrorFlags), reading the store through open into spool.
func mirrorOptions(c *cli.Context, env *cliutil.Env, open func() (mirror.Source, error), spool string, log *slog.Logger) mirror.Options {
	rate, _ := minRate(c) // refused by checkMirrorFlags; 0 (the default) otherwise
	return mirror.Options{Open: open, SpoolDir: spool, Refresh: c.Duration("refresh"),
		MaxInFlight: c.Int("max-in-flight"), MaxPeerInFlight: c.Int("max-in-flight") / c.Int("peer-share"), Logger: log,
		ReadyRecheck: c.Duration("ready-recheck"), MinDataRate: rate,
		Now: env.Now} // the store's clock: expiry and /readyz rechecks agree with it
}

// mirrorSpool returns the folder the bundle files are served from: the
// one given, or a folder of this process's own in DB.mirror/, next to the
// store, that remove deletes on exit; one a killed 'ampbundle serve' left
// there is removed at the next start (mirror.ServeSpool). Its copies of
// bundle files, up to 1 GiB each, were left in $TMPDIR for good before
// (docs/SPEC-DECISIONS.md MIRROR-34).
func mirrorSpool(spool, db string) (dir string, remove func(), err error) {
	if spool != "" {
		return spool, func() {}, nil
	}
	base := db + ".mirror"
	dir, remove, err = mirror.ServeSpool(base)
	if err != nil {
		return "", nil, mirrorSpoolRefusal(base, err)
	}
	return dir, remove, nil
}

// mirrorSpoolRefusal is serve's io_error for the default spool folder base
// that mirror.ServeSpool refused (err): one through which another user
// could redirect what the mirror writes and removes (a link, another
// user's, one group or others may write, or below such a folder), a file
// system without file locks, or one that cannot be made; each names the
// folder and says to give --spool (docs/SPEC-DECISIONS.md MIRROR-35).
func mirrorSpoolRefusal(base string, err error) error {
	const hint = "give --spool a folder of its own for the bundle files served"
	var unsafe *mirror.SpoolBaseError
	switch {
	case errors.As(err, &unsafe):
		return cliutil.WithHint(cliutil.Failf("io_error", "the spool folder %s is refused: %s %s", cliutil.Sanitize(base), cliutil.Sanitize(unsafe.Path), unsafe.Why),
			hint+", or make "+cliutil.Sanitize(base)+" a folder of this user's that group and others may not write, below folders only this user or root may write (chmod go-w)")
	case errors.Is(err, mirror.ErrNoFileLocks):
		return cliutil.WithHint(cliutil.Failf("io_error", "the file system of %s does not lock files: the spool folder of a running serve could not be told from a killed one's", cliutil.Sanitize(base)),
			hint+" (or put the store on a local file system)")
	}
	return cliutil.WithHint(cliutil.Failf("io_error", "cannot create the spool folder %s", cliutil.Sanitize(base)).WithCause(err), hint)
}

// mirrorOpener returns how the mirror reads the store at each snapshot:
// the store file, read-only, or, when a running agent holds it, that
// agent's admin socket (sock, or the one next to db); another user's
// socket there is refused as admin_socket with its hint, as openStoreAt
// refuses it.
func mirrorOpener(env *cliutil.Env, db, sock string) func() (mirror.Source, error) {
	if sock == "" {
		sock = admin.SocketPath(db)
	}
	return func() (mirror.Source, error) {
		s, err := resolver.Open(db, resolver.Options{Now: env.Now, ReadOnly: true, LockTimeout: storeLockTimeout})
		if err == nil {
			return s, nil
		}
		if errors.Is(err, resolver.ErrStoreInUse) {
			ac, aerr := admin.DialStore(sock, db)
			if aerr == nil {
				return ac, nil
			}
			if admin.ReportAsIs(aerr) {
				// Not store_in_use: another user's socket, an agent of
				// another store or a silent process sits where the agent's
				// should be; the refusal carries its hint
				// (docs/SPEC-DECISIONS.md ADMIN-1, ADMIN-5, ADMIN-8, ADMIN-9).
				return nil, aerr
			}
		}
		return nil, storeHint(err, db)
	}
}

// mirrorListeners are the listeners of 'ampbundle serve': main (limited
// by --max-conns and --peer-share, under TLS when configured, scheme
// saying which) and metrics (nil without --metrics-listen).
type mirrorListeners struct {
	main, metrics net.Listener
	scheme        string
}

// close closes both listeners (before anything was served on them).
func (l mirrorListeners) close() {
	l.main.Close()
	if l.metrics != nil {
		l.metrics.Close()
	}
}

// listenMirror opens the listeners of 'ampbundle serve', closing the
// first when the second cannot be opened.
func listenMirror(c *cli.Context, tlsCfg *tls.Config) (mirrorListeners, error) {
	ln, err := net.Listen("tcp", c.String("listen"))
	if err != nil {
		return mirrorListeners{}, cliutil.Failf("listen_failed", "cannot listen on the address").WithCause(err)
	}
	var metricsLn net.Listener
	if metricsListen := c.String("metrics-listen"); metricsListen != "" {
		if metricsLn, err = net.Listen("tcp", metricsListen); err != nil {
			ln.Close()
			return mirrorListeners{}, cliutil.Failf("listen_failed", "cannot listen on the metrics address").WithCause(err)
		}
	}
	ln = transport.LimitListener(ln, c.Int("max-conns"), c.Int("max-conns")/c.Int("peer-share"))
	scheme := "http"
	if tlsCfg != nil {
		ln = tls.NewListener(ln, tlsCfg)
		scheme = "https"
	}
	return mirrorListeners{main: ln, metrics: metricsLn, scheme: scheme}, nil
}

// mirrorHandler is what the main listener serves: the mirror, and the
// read-only catalog under catalog.Prefix unless --catalog=false.
func mirrorHandler(c *cli.Context, env *cliutil.Env, log *slog.Logger, m *mirror.Server, open func() (mirror.Source, error)) (http.Handler, error) {
	if !c.Bool("catalog") {
		return m, nil
	}
	openCatalog := func() (catalog.Source, error) {
		s, err := open()
		if err != nil {
			return nil, err
		}
		return s, nil
	}
	rate, err := minRate(c) // 0 when not given: the catalog's default
	if err != nil {
		return nil, err
	}
	ch, err := catalog.NewHandler(catalog.Options{Open: openCatalog, Now: env.Now, Logger: log, PeerShare: c.Int("peer-share"), MinDataRate: rate})
	if err != nil {
		return nil, err
	}
	// The mirror keeps every other path exactly as before (no mux
	// cleaning or redirects in front of it).
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, catalog.Prefix) {
			ch.ServeHTTP(w, r)
			return
		}
		m.ServeHTTP(w, r)
	}), nil
}

// serveMirrorMetrics serves the mirror's metrics on ln, a listener of
// their own, behind hosts on every connection (the operator's, as the
// agent's: CATALOG-20), its failure sent to errs; it returns the server
// and the metrics URL, or nil and "" without ln.
func serveMirrorMetrics(m *mirror.Server, hosts hostguard.Guard, ln net.Listener, errs chan<- error) (*http.Server, string) {
	if ln == nil {
		return nil, ""
	}
	srv := cliutil.SideServer(mirror.MetricsPath, mirror.ScriptFree(hosts.Wrap(m.MetricsHandler())))
	go func() { errs <- srv.Serve(ln) }()
	return srv, "http://" + ln.Addr().String() + mirror.MetricsPath
}

// waitMirror waits for what ends the mirror: a signal or the end of ctx
// (a graceful stop, nil), or a server's failure (serve_failed).
func waitMirror(ctx context.Context, log *slog.Logger, sigs <-chan os.Signal, errs <-chan error) error {
	select {
	case s := <-sigs:
		log.Info("shutting down", "signal", s.String())
	case <-ctx.Done():
		log.Info("shutting down", "reason", "context ended")
	case err := <-errs:
		return cliutil.Failf("serve_failed", "the server stopped").WithCause(err)
	}
	return nil
}
