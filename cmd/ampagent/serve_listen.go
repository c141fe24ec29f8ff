package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/transport"
	"github.com/ampbundle/ampbundle/transport/amphttp"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// listen binds every listener (TCP, HTTP, the catalog's, metrics, MCP)
// and mounts the HTTP routes that need no agent: readiness, discovery
// and the catalog. It comes before the ledger is opened, so
// that an address in use refuses the start before any file is made
// (docs/SPEC-DECISIONS.md CLI-11); nothing is served until start.
func (s *server) listen() error {
	cfg := s.cfg
	tcpLn, tcpURL, err := tcpListener(s.cfg, s.tcpTLS)
	if err != nil {
		return err
	}
	if tcpLn != nil {
		s.tcpLn, s.tcpURL = tcpLn, tcpURL
		s.onClose(func() { tcpLn.Close() })
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return cliutil.Failf("listen_failed", "cannot listen on the address").WithCause(err)
	}
	s.limited = transport.LimitListener(ln, cfg.MaxConns, cfg.MaxConns/cfg.PeerShare)
	s.ln = s.limited
	s.onClose(func() { s.ln.Close() })
	s.mux = http.NewServeMux()
	s.mux.Handle(ReadyPath, s.ready)
	s.mux.Handle("/", unknownRoute{})
	if err := mountDiscovery(s.mux, s.c.Bool("agh"), cfg, s.store, s.id); err != nil {
		return err
	}
	catalogURL, startCatalog, stopCatalog, err := mountCatalog(s.c, s.env, cfg, s.mux, s.store, s.log)
	if err != nil {
		return err
	}
	s.catalogURL, s.startCatalog = catalogURL, startCatalog
	if catalogURL == "" && cfg.catalog { // --catalog: under /ui/ of --listen
		s.catalogURL = "http://" + ln.Addr().String() + catalog.Prefix
	}
	s.onClose(stopCatalog)
	if cfg.MetricsListen != "" {
		if s.metricsLn, err = net.Listen("tcp", cfg.MetricsListen); err != nil {
			return cliutil.Failf("listen_failed", "cannot listen on the metrics address").WithCause(err)
		}
		s.onClose(func() { s.metricsLn.Close() })
	}
	if err := s.mcp.bind(); err != nil {
		return err
	}
	s.onClose(s.mcp.closeListener)
	return nil
}

// mountAgent mounts the agent's routes (messages, health) on --listen's
// bound listener, once the ledger is open and the agent built.
func (s *server) mountAgent() error {
	h := s.messageHandler()
	s.mux.Handle(amphttp.MessagesPath, h)
	s.mux.Handle(amphttp.HealthPath, h)
	// The write deadline counts from the request: it covers the longest
	// answer (a BATCH: MaxBatchDuration plus one item's timeout, AGENT-13)
	// and the reply's write.
	routes := instrument(rateSideRoutes(s.mux, 0), s.met, s.log)
	if s.cfg.catalog {
		// The operator's catalog makes --listen the operator's origin:
		// every route of it is behind the Host rule on loopback
		// connections (CATALOG-20), else a rebound page read beside /ui/
		// the AGH catalog, /readyz, /healthz and the messages route.
		guard, _ := newHostGuard(s.cfg.allowHosts) // checked by validateServe
		routes = guard.g.OnLoopbackOnly().Wrap(routes)
	}
	s.srv = amphttp.NewServer(mirror.ScriptFree(routes), agent.Bounds{MaxTimeout: s.maxTimeout}.LongestAnswer()+30*time.Second, s.log)
	return nil
}

// rateSideRoutes is mux with the answers of the routes mounted beside
// the agent's (the AGH projection, the discovery documents, /readyz, the
// 404) written at the minimum data rate after grace (transport.RateBodies;
// admission.FrameGrace when zero or less). Without it such an answer had
// the server's write timeout alone (150 s and more): a peer that reads
// none of it holds its handler, its answer's bytes, and an AGH answer's
// build slot, four in all for every caller, for that long
// (docs/SPEC-DECISIONS.md TRANSPORT-32). The routes that bound their own
// writes keep their bound: the agent's (amphttp, TRANSPORT-4 and
// TRANSPORT-31) and the catalog's (CATALOG-24).
func rateSideRoutes(mux http.Handler, grace time.Duration) http.Handler {
	rated := transport.RateBodies(mux, admission.MinDataRate, grace)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch p := r.URL.Path; {
		case p == amphttp.MessagesPath, p == amphttp.HealthPath, strings.HasPrefix(p, catalog.Prefix):
			mux.ServeHTTP(w, r)
		default:
			rated.ServeHTTP(w, r)
		}
	})
}

// messageHandler is the HTTP binding of the agent, with its limits and
// the health document.
func (s *server) messageHandler() http.Handler {
	cfg, limited, store, ledgerStore := s.cfg, s.limited, s.store, s.ledgerStore
	return amphttp.NewHandler(s.agents, amphttp.Options{MaxBody: cfg.MaxBodyBytes, Logger: s.log,
		MaxInFlight: cfg.MaxInFlight, MaxInFlightBytes: cfg.MaxInFlightBytes,
		MaxPeerInFlight: inFlight(cfg) / cfg.PeerShare, MaxPeerInFlightBytes: inFlightBytes(cfg) / int64(cfg.PeerShare),
		Health: func() map[string]any {
			u := ledgerStore.Usage()
			return map[string]any{"generation": store.Generation(), "ledger_entries": u.Entries, "ledger_bytes": u.Bytes, "ledger_budget": u.Budget,
				"http_conns": limited.Open(), "http_conns_refused": limited.Refused()}
		}})
}

// openAdmin opens the admin socket through which bundles are imported
// and removed while the agent holds the store. It is the last socket
// made before the ledger is opened (CLI-11), and serves the store at once:
// what it changes is what `ampbundle` would change with no agent running.
func (s *server) openAdmin() error {
	admin, err := admin.Serve(s.store, s.cfg.AdminSocket, s.log)
	if err != nil {
		return err
	}
	s.admin = admin
	s.onClose(func() { admin.Close() })
	return nil
}

// start serves every listener (HTTP, catalog, admin, TCP, MCP, metrics)
// and prints where.
func (s *server) start() error {
	cfg, errs := s.cfg, s.errs
	go func() { errs <- s.srv.Serve(s.ln) }()
	s.startCatalog(errs)
	go func() {
		if err := <-s.admin.Done(); err != nil {
			errs <- err
		}
	}()
	if s.tcpLn != nil {
		s.stopTCP = startTCP(s.tcpLn, s.agents, tcpServerOptions(cfg, s.log), errs)
	}
	mcpURL, stopMCP, err := startMCP(s.c, s.mcp, cfg, s.store, s.agents.mcpAgent, s.log, errs)
	if err != nil {
		s.stopTCP(context.Background())
		s.srv.Close()
		return err
	}
	s.stopMCP = stopMCP
	metricsURL := s.startMetrics()
	s.announce(mcpURL, metricsURL)
	return nil
}

// startMetrics serves the metrics listener, if any, behind the Host guard
// (hostGuard), and returns its URL.
func (s *server) startMetrics() string {
	if s.metricsLn == nil {
		return ""
	}
	guard, _ := newHostGuard(s.cfg.allowHosts) // checked by validateServe
	s.metricsSrv = cliutil.SideServer(MetricsPath, guard.wrap(s.met.handler()))
	go func() { s.errs <- s.metricsSrv.Serve(s.metricsLn) }()
	return "http://" + s.metricsLn.Addr().String() + MetricsPath
}

// announce logs and prints (text, or one JSON document with --json) the
// listeners' addresses: the text says what the document says, a line for
// each listener.
func (s *server) announce(mcpURL, metricsURL string) {
	url, did, sock := "http://"+s.ln.Addr().String(), s.id.DID, s.admin.Path()
	doc := map[string]any{"listening": url, "did": did, "admin_socket": sock}
	for k, v := range map[string]string{"mcp": mcpURL, "listening_tcp": s.tcpURL, "catalog": s.catalogURL, "metrics": metricsURL} {
		if v != "" {
			doc[k] = v
		}
	}
	s.log.Info("agent serving", "url", url, "tcp_url", s.tcpURL, "did", did, "handlers", len(s.cfg.Handlers), "rules", len(s.cfg.rules), "admin_socket", sock, "mcp", mcpURL, "catalog", s.catalogURL, "metrics", metricsURL)
	if s.c.Bool("json") {
		cliutil.PrintJSON(s.env.Stdout, doc)
		return
	}
	out := s.env.Stdout
	// The admin socket's path is the operator's (--admin-socket, or next
	// to --db), and may be a name from a folder others write: shown
	// through Sanitize, as every address (docs/SPEC-DECISIONS.md CLI-52).
	S := cliutil.Sanitize
	fmt.Fprintf(out, "listening on %s as %s (admin socket %s)\n", S(url), S(did), S(sock))
	if s.tcpURL != "" {
		fmt.Fprintf(out, "listening on %s (tcp binding)\n", S(s.tcpURL))
	}
	if mcpURL != "" {
		fmt.Fprintf(out, "mcp on %s\n", S(mcpURL))
	}
	if metricsURL != "" {
		fmt.Fprintf(out, "metrics on %s\n", S(metricsURL))
	}
	if s.catalogURL != "" {
		fmt.Fprintf(out, "catalog on %s\n", S(s.catalogURL))
	}
}

// wait serves until a stop signal, ctx or a failed listener; SIGHUP
// reloads. It returns the failure, if any.
func (s *server) wait(ctx context.Context, sigs, reloads <-chan os.Signal) error {
	for {
		select {
		case sig := <-sigs:
			if sig == syscall.SIGHUP { // an injected Env.Signals carries it too
				s.reload()
				continue
			}
			s.log.Info("shutting down", "signal", sig.String())
			return nil
		case <-reloads:
			s.reload()
		case <-ctx.Done():
			s.log.Info("shutting down", "reason", "context ended")
			return nil
		case err := <-s.errs:
			return cliutil.Failf("serve_failed", "the server stopped").WithCause(err)
		}
	}
}

// reload applies the config file's (and --allow's) handlers and allow
// rules to new requests, or logs why not and keeps the running ones.
func (s *server) reload() {
	next, err := loadServeConfig(s.c)
	if err == nil {
		err = checkReload(s.cfg, next)
	}
	var fresh *agent.Agent
	if err == nil {
		fresh, err = s.newAgent(next.Handlers, next.rules)
	}
	if err != nil {
		s.log.Error("reload refused: the running handlers and allow rules stay", "err", amp.SafeMessage(err))
		return
	}
	s.agents.swap(fresh)
	s.ready.setHandlers(next.Handlers)
	s.warnConfig(next)
	s.log.Info("config reloaded", "handlers", len(next.Handlers), "rules", len(next.rules))
}

// shutdown stops the listeners gracefully: in-flight requests finish
// (up to the longest answer the agent gives, a BATCH's: its
// MaxBatchDuration plus one item's timeout, agent.Bounds.LongestAnswer).
func (s *server) shutdown() {
	sctx, cancel := context.WithTimeout(context.Background(), agent.Bounds{MaxTimeout: s.maxTimeout}.LongestAnswer()+5*time.Second)
	defer cancel()
	log := s.log
	if err := s.stopMCP(sctx); err != nil {
		log.Warn("graceful mcp shutdown incomplete", "err", err)
	}
	tcpStopped := make(chan error, 1)
	go func() { tcpStopped <- s.stopTCP(sctx) }()
	if err := s.srv.Shutdown(sctx); err != nil {
		log.Warn("graceful shutdown incomplete", "err", err)
	}
	// Refused connections still closing gracefully (Shutdown does not
	// track them): at most transport.AnswerLinger more.
	lctx, lcancel := context.WithTimeout(sctx, transport.AnswerLinger+time.Second)
	s.limited.WaitClosed(lctx)
	lcancel()
	if err := <-tcpStopped; err != nil {
		log.Warn("graceful tcp shutdown incomplete", "err", err)
	}
	s.admin.Shutdown(sctx)
	if s.metricsSrv != nil {
		s.metricsSrv.Shutdown(sctx)
	}
	cliutil.FlushLog(context.Background(), log)
	log.Info("stopped")
}

// tcpServerOptions are the --listen-tcp listener's limits: the HTTP
// listener's (--max-in-flight-bytes, --max-conns, --peer-share), its own
// message slots (--tcp-max-in-flight) and TLS handshake rate
// (--tcp-handshake-rate; 0 is ampstcp's default).
func tcpServerOptions(cfg *serveConfig, log *slog.Logger) ampstcp.ServerOptions {
	return ampstcp.ServerOptions{MaxMessageSize: int(cfg.MaxBodyBytes), MaxInFlightBytes: cfg.MaxInFlightBytes,
		MaxConns: cfg.MaxConns, MaxPeerConns: cfg.MaxConns / cfg.PeerShare,
		MaxInFlightTotal: tcpInFlight(cfg), MaxPeerInFlight: max(1, tcpInFlight(cfg)/cfg.PeerShare), MaxPeerInFlightBytes: inFlightBytes(cfg) / int64(cfg.PeerShare),
		PeerHandshakeRate: cfg.TCPHandshakeRate, Logger: log}
}
