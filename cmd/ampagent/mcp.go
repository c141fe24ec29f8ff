package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/regfile"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/mcpbridge"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// mcpCommand is `ampagent mcp`: the agent's verified catalog as MCP tools
// over stdio, for the local user who started it.
func mcpCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:  "mcp",
		Usage: "serve the verified catalog as MCP tools over stdio (for an MCP host)",
		Description: `Serves the Model Context Protocol over stdin and stdout (newline-delimited
JSON-RPC) for an MCP host that starts it: each capability version the agent
serves (the config file's "handlers") and the principal may use (the allow
rules, as for AMP callers) is a tool whose inputSchema and outputSchema are
the bundle's verified schemas with their whole $ref closure. tools/call
runs the agent's CAP_INVOKE pipeline (offline validation, the handler,
output validation) and returns the agent-signed CAP_RESULT in _meta.

The caller is the local user who started the process: the principal
--principal (default did:local:uid-UID, UID the process's user id), which
the allow rules name (--allow did:local:uid-1000=org.example.). Nothing
else can reach a stdio server. Logs go to stderr; stdout carries only MCP.

The process holds the store as serve does: import or remove bundles with
'ampbundle', which goes through its admin socket; the tools change and the
host is told (notifications/tools/list_changed).`,
		Flags: append(agentFlags(),
			&cli.StringFlag{Name: "config", Usage: "config `FILE` (JSON, serve's, writable by the agent's user alone): handlers, allow rules, limits"},
			&cli.StringSliceFlag{Name: "allow", Usage: "allow `CALLER=PREFIX` (repeatable), e.g. 'did:local:uid-1000=org.example.'"},
			&cli.StringFlag{Name: "principal", Usage: "the `DID` the local user is, for the allow rules (default did:local:uid-UID)"},
			&cli.StringFlag{Name: "admin-socket", Usage: "admin socket `PATH` (default DB.admin.sock)"},
			&cli.StringFlag{Name: "ledger", Usage: "idempotency ledger `FILE` (default DB.ledger.wal)"},
			&cli.StringFlag{Name: "listen", Hidden: true},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json"},
			&cli.StringFlag{Name: "log-level", Value: "warn", Usage: "log level: debug, info, warn, error"},
			cliutil.LogRateFlag(),
		),
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db", "key"); err != nil {
				return err
			}
			if c.IsSet("listen") {
				return cliutil.Usagef("mcp serves stdio; for HTTP use 'ampagent serve --mcp-listen ADDR'")
			}
			_ = c.Set("listen", "stdio") // serve's config checks want one
			cfg, err := loadServeConfig(c)
			if err != nil {
				return err
			}
			principal := c.String("principal")
			if principal == "" {
				principal = localPrincipal()
			}
			if !amp.ValidDID(principal) || amp.BareDID(principal) != principal {
				return cliutil.Usagef("--principal must be a did without a fragment")
			}
			log, err := newLogger(env, c)
			if err != nil {
				return err
			}
			return runMCPStdio(c, env, cfg, principal, log)
		},
	}
}

// localPrincipal is the default principal of a stdio session: the user
// who started the process (docs/SPEC-DECISIONS.md MCP-4).
func localPrincipal() string {
	if uid := os.Getuid(); uid >= 0 {
		return "did:local:uid-" + strconv.Itoa(uid)
	}
	return "did:local:user"
}

// runMCPStdio opens the store, the ledger and the agent as serve does and
// serves one MCP session on stdin and stdout. As serve, it checks
// everything before it opens the admin socket, and makes the socket
// before it opens the ledger.
func runMCPStdio(c *cli.Context, env *cliutil.Env, cfg *serveConfig, principal string, log *slog.Logger) error {
	key, err := loadAgentKey(c, env, c.String("key"), cfg.DID)
	if err != nil {
		return err
	}
	id := key.id
	db := c.String("db")
	store, err := openAgentStore(env, db)
	if errors.Is(err, resolver.ErrStoreInUse) {
		return cliutil.WithHint(err, "a running agent holds the store (ampagent serve, the service): have it serve MCP with --mcp-listen ADDR --mcp-token-file FILE, or give mcp a store of its own")
	} else if err != nil {
		return err
	}
	defer store.Close()
	if err := checkAgentKey(store, key, log); err != nil {
		return err
	}
	handlers, maxResult := programHandlers(cfg.Handlers, log, nil)
	acfg := agent.Config{
		Core: agent.Core{Identity: id, Store: store, Policy: cfg.rules, Handlers: handlers, Now: env.Now, Rand: env.Rand},
		// A zero max_timeout_ms or max_param_items is the agent's default.
		Bounds: agent.Bounds{MaxResultBytes: maxResult, MaxTimeout: time.Duration(cfg.MaxTimeoutMS) * time.Millisecond, MaxParamItems: cfg.MaxParamItems,
			MaxOverdueHandlers: cfg.MaxOverdueHandlers},
		Hooks: agent.Hooks{Logger: log, Admit: cfg.slots.hook()}}
	lo := ledgerFileOptions(env, cfg)
	if err := agentError(probeAgent(acfg, lo.Limits)); err != nil {
		return err
	}
	// The admin socket is made before the ledger is opened: a start
	// refused at it leaves no ledger file (docs/SPEC-DECISIONS.md CLI-11).
	adminSrv, err := admin.Serve(store, cfg.AdminSocket, log)
	if err != nil {
		return err
	}
	defer adminSrv.Close()
	bs, _, err := ledger.OpenFile(db, lo)
	if err != nil {
		return cliutil.WithHint(err, "if the ledger file is in use, another agent holds it: each agent needs its own (--ledger FILE); otherwise the error says what to fix")
	}
	defer bs.Close()
	if acfg.Ledger, err = ledger.New(bs, ledger.Options{Now: env.Now}); err != nil {
		return err
	}
	a, err := agent.New(acfg)
	if err != nil {
		return err
	}
	defer a.Close()
	b, err := mcpbridge.New(mcpbridge.Options{Agent: func() mcpbridge.Agent { return a }, Store: store, Logger: log,
		Version: cliutil.ReadBuild("ampagent").Version, MaxParamItems: cfg.MaxParamItems})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(c.Context)
	defer cancel()
	sigs, stop := env.StopSignals()
	defer stop()
	go func() {
		select {
		case <-sigs:
			cancel()
		case <-ctx.Done():
		}
	}()
	go b.Run(ctx)
	log.Info("mcp serving on stdio", "did", id.DID, "principal", principal, "admin_socket", adminSrv.Path())
	noToolWarning(log, principal, cfg)
	t := &mcp.IOTransport{Reader: io.NopCloser(env.Stdin), Writer: nopWriteCloser{env.Stdout}, MaxLineLength: int(mcpMaxBody(cfg))}
	err = b.ServeStdio(ctx, principal, t)
	if err != nil && ctx.Err() == nil && !errors.Is(err, io.EOF) {
		return cliutil.Failf("mcp_failed", "the mcp session ended: %s", amp.SafeMessage(err)).WithCause(err)
	}
	return nil
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// mcpServeFlags are serve's flags for MCP's streamable HTTP transport.
func mcpServeFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "mcp-listen", Usage: "also serve MCP (streamable HTTP) at POST/GET /mcp on `ADDR` (needs --mcp-token-file or --mcp-client-ca)"},
		&cli.StringFlag{Name: "mcp-token-file", Usage: "bearer tokens of MCP callers: `FILE` of \"DID TOKEN\" lines (mode 0600, owned by the agent's user or root); the allow rules name the DID"},
		&cli.StringFlag{Name: "mcp-tls-cert", Usage: "TLS certificate chain `FILE` (PEM) for --mcp-listen"},
		&cli.StringFlag{Name: "mcp-tls-key", Usage: "TLS private key `FILE` (PEM) for --mcp-tls-cert"},
		&cli.StringFlag{Name: "mcp-client-ca", Usage: "mutual TLS: client certificates signed by the CAs in `FILE` (PEM) are the DID of their first DID URI SAN"},
		&cli.StringSliceFlag{Name: "mcp-allow-origin", Usage: "an `ORIGIN` browsers may call MCP from (repeatable; default none: a request with an Origin header is 403)"},
		&cli.IntFlag{Name: "mcp-max-sessions", Value: 1024, Usage: "live MCP sessions at most `N` in all (beyond: 503 with Retry-After)"},
		&cli.IntFlag{Name: "mcp-max-principal-sessions", Value: 64, Usage: "live MCP sessions of one caller at most `N` (beyond: 429 with Retry-After)"},
	}
}

// MCPPath is where serve answers MCP's streamable HTTP transport.
const MCPPath = "/mcp"

// mcpMaxStreams is how many HTTP/2 streams one MCP connection holds open
// at once: a peer that never opens a flow-control window pins at most
// that many handlers a connection (MCP-50).
const mcpMaxStreams = 16

// mcpSetup is what serve's --mcp-* flags resolve to: the address, the
// TLS configuration and the tokens, read and checked before serve opens
// anything (checkMCPFlags).
type mcpSetup struct {
	addr   string
	tls    *tls.Config
	tokens []mcpbridge.Token
	ln     net.Listener // bound by bind, served by startMCP
}

// bind binds --mcp-listen's address (nothing without --mcp-listen); serve
// binds it with its other listeners, before the ledger is opened
// (docs/SPEC-DECISIONS.md CLI-11), and startMCP serves it.
func (m *mcpSetup) bind() error {
	if m == nil {
		return nil
	}
	ln, err := net.Listen("tcp", m.addr)
	if err != nil {
		return cliutil.Failf("listen_failed", "cannot listen on the mcp address").WithCause(err)
	}
	m.ln = ln
	return nil
}

// closeListener releases the bound listener (closing it twice, after
// the server stopped it, does nothing more).
func (m *mcpSetup) closeListener() {
	if m != nil && m.ln != nil {
		m.ln.Close()
	}
}

// checkMCPFlags checks serve's --mcp-* flags and reads the files they
// name (it writes nothing). It returns nil without --mcp-listen.
func checkMCPFlags(c *cli.Context) (*mcpSetup, error) {
	addr := c.String("mcp-listen")
	if addr == "" {
		for _, f := range []string{"mcp-token-file", "mcp-tls-cert", "mcp-tls-key", "mcp-client-ca", "mcp-allow-origin", "mcp-max-sessions", "mcp-max-principal-sessions"} {
			if c.IsSet(f) {
				return nil, cliutil.Usagef("--%s is for --mcp-listen", f)
			}
		}
		return nil, nil
	}
	if c.Int("mcp-max-sessions") < 1 || c.Int("mcp-max-principal-sessions") < 1 {
		return nil, cliutil.Usagef("--mcp-max-sessions and --mcp-max-principal-sessions are at least 1")
	}
	tlsCfg, tokens, err := mcpAuth(c, addr)
	if err != nil {
		return nil, err
	}
	return &mcpSetup{addr: addr, tls: tlsCfg, tokens: tokens}, nil
}

// startMCP serves MCP's streamable HTTP transport on the listener bound
// as set up (nil: no --mcp-listen, nothing served): never open (bearer
// tokens or client certificates), loopback only for plain HTTP unless
// --unsafe-listen (checkMCPFlags), bounded like the AMP binding. It returns the
// endpoint's URL and its stop function.
func startMCP(c *cli.Context, setup *mcpSetup, cfg *serveConfig, store *resolver.Store, agents func() mcpbridge.Agent, log *slog.Logger, errs chan<- error) (string, func(context.Context) error, error) {
	none := func(context.Context) error { return nil }
	if setup == nil {
		return "", none, nil
	}
	tlsCfg, tokens := setup.tls, setup.tokens
	b, err := mcpbridge.New(mcpbridge.Options{Agent: agents, Store: store, Logger: log,
		Version: cliutil.ReadBuild("ampagent").Version, MaxParamItems: cfg.MaxParamItems})
	if err != nil {
		return "", none, err
	}
	guard, err := newHostGuard(cfg.allowHosts) // checked by validateServe
	if err != nil {
		return "", none, err
	}
	h := b.HTTPHandler(mcpbridge.HTTPOptions{Tokens: tokens, ClientCerts: tlsCfg != nil && tlsCfg.ClientCAs != nil, Hosts: guard.g,
		AllowedOrigins: c.StringSlice("mcp-allow-origin"), MaxBody: mcpMaxBody(cfg),
		MaxInFlight: inFlight(cfg), MaxPeerInFlight: inFlight(cfg) / cfg.PeerShare,
		MaxInFlightBytes: inFlightBytes(cfg), MaxPeerInFlightBytes: inFlightBytes(cfg) / int64(cfg.PeerShare),
		MaxSessions: c.Int("mcp-max-sessions"), MaxPrincipalSessions: c.Int("mcp-max-principal-sessions")})
	ln := setup.ln
	limited := transport.LimitListener(ln, cfg.MaxConns, cfg.MaxConns/cfg.PeerShare)
	mux := http.NewServeMux()
	mux.Handle(MCPPath, h)
	mux.Handle("/", unknownRoute{})
	// Requests run on ctx: stopping cancels the open notification
	// streams (a GET that never ends), so that Shutdown does not wait for
	// them; a call already claimed in the ledger finishes regardless.
	ctx, cancel := context.WithCancel(context.Background())
	// Over HTTP/2 (TLS) a POST's rated answer (MCP-43) passing its
	// deadline resets only its stream, and the reset waits behind the
	// frames stuck in the connection: a peer that opens large windows
	// and stops reading would keep the handler and its slot. The
	// connection is closed when nothing could be written to it for the
	// grace, pinged when idle, and holds at most mcpMaxStreams streams,
	// as amphttp.NewServer does for the AMP binding (MCP-50).
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute, MaxHeaderBytes: 64 << 10,
		TLSConfig: tlsCfg, BaseContext: func(net.Listener) context.Context { return ctx },
		HTTP2: &http.HTTP2Config{MaxConcurrentStreams: mcpMaxStreams, WriteByteTimeout: admission.FrameGrace,
			SendPingTimeout: 2 * time.Minute, PingTimeout: admission.FrameGrace}}
	go b.Run(ctx)
	stopReload := reloadMCPTokens(ctx, c, h, tlsCfg != nil && tlsCfg.ClientCAs != nil, log)
	scheme := "http"
	go func() {
		var err error
		if tlsCfg != nil {
			err = srv.ServeTLS(limited, "", "")
		} else {
			err = srv.Serve(limited)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs <- err
		}
	}()
	if tlsCfg != nil {
		scheme = "https"
	}
	return scheme + "://" + ln.Addr().String() + MCPPath, func(sctx context.Context) error {
		stopReload()
		cancel()
		return srv.Shutdown(sctx)
	}, nil
}

// mcpMaxBody is the AMP binding's body bound (max_body_bytes, --max-body).
func mcpMaxBody(cfg *serveConfig) int64 {
	if cfg.MaxBodyBytes > 0 {
		return cfg.MaxBodyBytes
	}
	return amphttp.DefaultMaxBody
}

// mcpAuth checks --mcp-listen's authentication flags: at least one of a
// token file and a client CA; plain HTTP only on loopback unless
// --unsafe-listen.
func mcpAuth(c *cli.Context, addr string) (*tls.Config, []mcpbridge.Token, error) {
	cert, key, ca, tokFile := c.String("mcp-tls-cert"), c.String("mcp-tls-key"), c.String("mcp-client-ca"), c.String("mcp-token-file")
	if tokFile == "" && ca == "" {
		return nil, nil, cliutil.WithHint(cliutil.Usagef("--mcp-listen is never open: give --mcp-token-file FILE or --mcp-client-ca FILE"),
			"a token file holds \"DID TOKEN\" lines; the allow rules name the DID (docs/CLI.md)")
	}
	if (cert == "") != (key == "") {
		return nil, nil, cliutil.Usagef("give both --mcp-tls-cert and --mcp-tls-key, or neither")
	}
	if ca != "" && cert == "" {
		return nil, nil, cliutil.Usagef("--mcp-client-ca needs --mcp-tls-cert and --mcp-tls-key")
	}
	if cert == "" && !cliutil.Loopback(addr) && !c.Bool("unsafe-listen") {
		return nil, nil, cliutil.WithHint(cliutil.Failf("unsafe_listen", "the mcp listen address is not a loopback address: plain http would be reachable from the network"),
			"give --mcp-tls-cert and --mcp-tls-key, listen on 127.0.0.1, or say --unsafe-listen")
	}
	var tokens []mcpbridge.Token
	if tokFile != "" {
		var err error
		if tokens, err = readMCPTokens(tokFile, ca != ""); err != nil {
			return nil, nil, err
		}
	}
	if cert == "" {
		return nil, tokens, nil
	}
	cfg, err := cliutil.ServerTLSNamed(cert, key, "--mcp-tls-cert file", "--mcp-tls-key file")
	if err != nil {
		return nil, nil, err
	}
	if ca != "" {
		// A trust anchor: another user's file, or one group or others
		// may write, is invalid_ca before it is parsed (CLI-86).
		pem, err := cliutil.ReadCAFile(ca, "mcp client ca file", "invalid_ca")
		if err != nil {
			return nil, nil, err
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, nil, cliutil.Failf("invalid_ca", "the mcp client ca file holds no PEM certificate")
		}
		cfg.ClientCAs = pool
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
		if len(tokens) > 0 {
			cfg.ClientAuth = tls.VerifyClientCertIfGiven
		}
	}
	return cfg, tokens, nil
}

// readOwnerOnly reads the file at path, at most max bytes, once it has
// judged the open file owner-only (keyfile.CheckOwnerOnly: its owner and
// mode, CLI-53, or on Windows its access list, CLI-51): the file judged is the file read, and
// one others may read is token_file_exposed.
func readOwnerOnly(path string, max int64, what string) ([]byte, error) {
	// regfile.Open examines what the path leads to before opening it: a
	// FIFO put there is refused at once, never waited on (a start, or a
	// SIGHUP reload that would hang and keep revoked tokens valid).
	f, st, err := regfile.Open(path, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotRegular) {
		return nil, cliutil.Failf("io_error", "the %s is not a regular file", what)
	}
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot read the %s", what).WithCause(err)
	}
	defer f.Close()
	if err := keyfile.CheckOwnerOnly(f, st, "the "+what); err != nil {
		if amp.NameOf(err) == keyfile.ErrInsecureKeyFile {
			return nil, cliutil.WithHint(cliutil.Failf("token_file_exposed", "the %s is readable by other users, or owned by one", what), "make the file the agent's user's (chown), readable by it alone (chmod 600)")
		}
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, cliutil.Failf("io_error", "cannot read the %s", what).WithCause(err)
	}
	if int64(len(data)) > max {
		return nil, cliutil.Failf("limit_exceeded", "the %s is larger than %d bytes", what, max)
	}
	return data, nil
}

// readMCPTokens reads and parses a token file: mode 0600 or stricter, at
// least one token unless client certificates authenticate too.
func readMCPTokens(path string, certs bool) ([]mcpbridge.Token, error) {
	data, err := readOwnerOnly(path, mcpbridge.MaxTokenFile, "mcp token file")
	if err != nil {
		return nil, err
	}
	tokens, err := mcpbridge.ParseTokenFile(data)
	if err != nil {
		return nil, cliutil.Failf(mcpbridge.ErrTokenFile, "%s", amp.SafeMessage(err))
	}
	if len(tokens) == 0 && !certs {
		return nil, cliutil.Failf(mcpbridge.ErrTokenFile, "the mcp token file holds no token")
	}
	return tokens, nil
}

// reloadMCPTokens re-reads --mcp-token-file on each SIGHUP (serve's reload
// signal) until ctx ends or the returned stop is called: a file that
// passes the start's checks replaces the tokens (a removed token is 401
// from then on); one that does not is logged and the running tokens stay.
func reloadMCPTokens(ctx context.Context, c *cli.Context, h *mcpbridge.HTTPEndpoint, certs bool, log *slog.Logger) func() {
	path := c.String("mcp-token-file")
	if path == "" {
		return func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case <-ch:
				tokens, err := readMCPTokens(path, certs)
				if err != nil {
					log.Error("mcp token file reload refused: the running tokens stay", "err", amp.SafeMessage(err))
					continue
				}
				h.SetTokens(tokens)
				log.Info("mcp token file reloaded", "tokens", len(tokens))
			}
		}
	}()
	return func() { signal.Stop(ch) }
}
