package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/resolver"
)

// serveConfig is the --config file (JSON). Flags override it.
type serveConfig struct {
	Listen       string                 `json:"listen"`
	DID          string                 `json:"did"`
	Allow        []string               `json:"allow"`
	MaxBodyBytes int64                  `json:"max_body_bytes"`
	MaxTimeoutMS int64                  `json:"max_timeout_ms"`
	AdminSocket  string                 `json:"admin_socket"`
	Handlers     map[string]execHandler `json:"handlers"`

	// rules are Allow, parsed (the file's, then --allow's).
	rules agent.Rules
}

// execHandler runs a program for a capability: params as JSON on stdin, the
// result as JSON on stdout.
type execHandler struct {
	// Command is the program and its arguments (no shell).
	Command []string `json:"command"`
	// Dir is the working directory (default: the agent's).
	Dir string `json:"dir"`
	// Env adds variables to the program's minimal environment.
	Env map[string]string `json:"env"`
}

func serveCommand(env *cliutil.Env) *cli.Command {
	return &cli.Command{
		Name:  "serve",
		Usage: "run the agent: answer AMP messages over HTTP from the local registry",
		Description: `Loads the agent identity (--key; --did for a did:web whose document is in
an imported bundle), opens the registry (--db, created by 'ampbundle trust
add' and filled by 'ampbundle import'), applies the policy (default: deny
everyone; --allow CALLER=PREFIX rules and the config file's "allow") and
serves POST /amp/v1/messages, GET /healthz (liveness: the process answers)
and GET /readyz (readiness, JSON; 503 when not ready: the store cannot be
read, its check finds a problem, a handler program is missing or not
executable, or an installed bundle is expired or expires within
--ready-expiry-window) on --listen.

Capabilities run as programs listed in the config file (--config):

  {"handlers": {"org.example.translate.text:2.1.0":
      {"command": ["/usr/local/bin/translate", "--v2"], "dir": "/srv", "env": {"MODE": "x"}}}}

A program gets the params as JSON on stdin and must print the result as JSON
on stdout and exit 0; its environment is minimal (PATH, plus AMP_CAPABILITY
and AMP_CALLER, plus "env"). A non-zero exit is a CAP_RESULT error 5001 (the
program's stderr goes to the log, never to the caller); a program still
running at the invocation's timeout is killed (its whole process group) and
the result is 5003.

While the agent runs it holds the store: bundles are imported and removed
through its admin socket (DB.admin.sock, mode 0600), which 'ampbundle'
uses by itself when it finds the store in use.

The agent refuses to start when the key file is unreadable or readable by
others, the store is missing or in use, the store trusts no publisher, a
handler names a capability the registry does not have, a handler program
is missing or not executable (unless --allow-missing-handlers), or the listen
address is not a loopback address (plain HTTP on a network) unless
--unsafe-listen says so. SIGINT or SIGTERM stops it gracefully: in-flight
requests finish.`,
		Flags: []cli.Flag{
			&cli.StringFlag{Name: "db", Usage: "registry store `FILE` (required)"},
			&cli.StringFlag{Name: "key", Usage: "agent key `FILE` from 'ampagent keygen' (required)"},
			&cli.StringFlag{Name: "did", Usage: "agent `DID` (a did:web documented in the store; default: the key's did:key)"},
			&cli.StringFlag{Name: "listen", Usage: "`ADDR` to listen on, e.g. 127.0.0.1:8080"},
			&cli.StringFlag{Name: "config", Usage: "config `FILE` (JSON): handlers, allow rules, limits"},
			&cli.StringSliceFlag{Name: "allow", Usage: "allow `CALLER=PREFIX` (repeatable), e.g. '*=org.example.'"},
			&cli.BoolFlag{Name: "unsafe-listen", Usage: "allow a non-loopback listen address (plain HTTP reachable from the network)"},
			&cli.StringFlag{Name: "admin-socket", Usage: "admin socket `PATH` (default DB.admin.sock)"},
			&cli.Int64Flag{Name: "max-body", Usage: "largest accepted message in `BYTES` (default 16 MiB)"},
			&cli.BoolFlag{Name: "allow-missing-handlers", Usage: "start even when a handler program is missing or not executable (logged, and /readyz reports it)"},
			&cli.DurationFlag{Name: "ready-expiry-window", Value: defaultExpiryWindow, Usage: "/readyz reports not ready when an installed bundle expires within `DURATION` (0: only when expired)"},
			&cli.DurationFlag{Name: "ready-recheck", Value: defaultRecheck, Usage: "/readyz re-runs the store check at least every `DURATION` (and whenever the store changes)"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log level: debug, info, warn, error"},
			jsonFlag,
		},
		Action: func(c *cli.Context) error {
			if err := cliutil.ExactArgs(c, 0, "no arguments"); err != nil {
				return err
			}
			if err := cliutil.Require(c, "db", "key"); err != nil {
				return err
			}
			cfg, err := loadServeConfig(c)
			if err != nil {
				return err
			}
			log, err := newLogger(env, c.String("log-format"), c.String("log-level"))
			if err != nil {
				return err
			}
			return runServe(c.Context, env, c, cfg, log)
		},
	}
}

func loadServeConfig(c *cli.Context) (*serveConfig, error) {
	cfg := &serveConfig{}
	if c.IsSet("config") {
		data, err := cliutil.ReadFile(c.String("config"), maxConfigFile, "config file")
		if err != nil {
			return nil, cliutil.Failf("invalid_config", "%s", amp.SafeMessage(err)).WithCause(err)
		}
		if err := decodeConfig(data, cfg); err != nil {
			return nil, err
		}
	}
	fileRules, err := parseRules(cfg.Allow, "in the config file", func(msg string) error { return cliutil.Failf("invalid_config", "%s", msg) })
	if err != nil {
		return nil, err
	}
	flagRules, err := parseRules(c.StringSlice("allow"), "given with --allow", func(msg string) error { return cliutil.Usagef("%s", msg) })
	if err != nil {
		return nil, err
	}
	cfg.rules = append(fileRules, flagRules...)
	if c.IsSet("listen") {
		cfg.Listen = c.String("listen")
	}
	if c.IsSet("did") {
		cfg.DID = c.String("did")
	}
	if c.IsSet("admin-socket") {
		cfg.AdminSocket = c.String("admin-socket")
	}
	if cfg.MaxBodyBytes != 0 && cfg.MaxBodyBytes < 1<<20 {
		return nil, cliutil.Failf("invalid_config", "max_body_bytes must be at least 1 MiB (the binding's minimum)")
	}
	if c.IsSet("max-body") {
		if c.Int64("max-body") < 1<<20 {
			return nil, cliutil.Usagef("--max-body must be at least 1 MiB (the binding's minimum)")
		}
		cfg.MaxBodyBytes = c.Int64("max-body")
	}
	if cfg.MaxTimeoutMS < 0 {
		return nil, cliutil.Failf("invalid_config", "max_timeout_ms must be positive (leave it out for the default, 60000)")
	}
	if cfg.Listen == "" {
		return nil, cliutil.Usagef("give --listen ADDR (or \"listen\" in the config file)")
	}
	for id, h := range cfg.Handlers {
		if len(h.Command) == 0 || h.Command[0] == "" {
			return nil, cliutil.Failf("invalid_config", "handler %s has no command", id)
		}
		for k := range h.Env {
			switch {
			case k == "" || strings.ContainsAny(k, "=\x00"):
				return nil, cliutil.Failf("invalid_config", "handler %s: an environment variable name is empty or holds '=' or NUL", id)
			case reservedEnv[k]:
				return nil, cliutil.Failf("invalid_config", "handler %s: %s is set by the agent and cannot be configured", id, k)
			}
		}
	}
	return cfg, nil
}

// maxConfigFile bounds the config file.
const maxConfigFile = 4 << 20

// reservedEnv are the variables the agent sets for a program handler: a
// config that could set them could make a program believe another caller
// invoked it.
var reservedEnv = map[string]bool{"AMP_CAPABILITY": true, "AMP_CALLER": true}

// decodeConfig decodes exactly one JSON object with known fields only.
// Field names are quoted back to the operator (they are keys of their own
// file, never values).
func decodeConfig(data []byte, cfg *serveConfig) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	err := dec.Decode(cfg)
	var se *json.SyntaxError
	switch {
	case errors.As(err, &se):
		return cliutil.Failf("invalid_config", "the config file is not valid json (offset %d)", se.Offset)
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return cliutil.Failf("invalid_config", "the config file is not valid json (it ends too early)")
	case err != nil:
		return cliutil.Failf("invalid_config", "the config file does not have the expected fields: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if _, err := dec.Token(); err != io.EOF {
		return cliutil.Failf("invalid_config", "the config file has data after its json object (offset %d)", dec.InputOffset())
	}
	return nil
}

// parseRules parses allow rules, naming a bad one by its position (the
// rule itself is not echoed).
func parseRules(rules []string, where string, fail func(string) error) (agent.Rules, error) {
	var out agent.Rules
	for i, s := range rules {
		r, err := agent.ParseRule(s)
		if err != nil {
			return nil, fail(fmt.Sprintf("allow rule %d %s: %s", i+1, where, amp.SafeMessage(err)))
		}
		out = append(out, r)
	}
	return out, nil
}

func newLogger(env *cliutil.Env, format, level string) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return nil, cliutil.Usagef("--log-level must be debug, info, warn or error")
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch format {
	case "text":
		return slog.New(slog.NewTextHandler(env.Stderr, opts)), nil
	case "json":
		return slog.New(slog.NewJSONHandler(env.Stderr, opts)), nil
	}
	return nil, cliutil.Usagef("--log-format must be text or json")
}

func runServe(ctx context.Context, env *cliutil.Env, c *cli.Context, cfg *serveConfig, log *slog.Logger) error {
	if !cliutil.Loopback(cfg.Listen) && !c.Bool("unsafe-listen") {
		return cliutil.WithHint(cliutil.Failf("unsafe_listen", "the listen address is not a loopback address: plain http would be reachable from the network"),
			"listen on 127.0.0.1, put the agent behind a tls proxy, or say --unsafe-listen")
	}
	id, err := loadIdentity(c.String("key"), cfg.DID)
	if err != nil {
		return err
	}
	db := c.String("db")
	store, err := resolver.Open(db, resolver.Options{Now: env.Now, LockTimeout: 250 * time.Millisecond})
	if err != nil {
		switch {
		case errors.Is(err, resolver.ErrStoreMissing):
			return cliutil.WithHint(err, "create the store with 'ampbundle trust add PUB --db "+db+" --name NAME --scope PREFIX' and fill it with 'ampbundle import'")
		case errors.Is(err, resolver.ErrStoreInUse):
			return cliutil.WithHint(err, "another agent or ampbundle command holds the store")
		}
		return err
	}
	defer store.Close()
	keys, err := store.TrustList()
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return cliutil.WithHint(cliutil.Failf("empty_trust_store", "the store trusts no publisher key: nothing in it can be verified"),
			"ampbundle trust add PUB --db "+db+" --name NAME --scope PREFIX")
	}
	rules := cfg.rules
	if len(rules) == 0 {
		log.Warn("no allow rules: every caller is refused (--allow CALLER=PREFIX)")
	}
	for _, p := range handlerProblems(cfg.Handlers) {
		if !c.Bool("allow-missing-handlers") {
			return cliutil.WithHint(cliutil.Failf("handler_program_missing", "the handler of %s cannot run: %s", p.Subject, p.Message),
				"install the program (an absolute path, or a name in PATH), fix the config file's \"handlers\", or start anyway with --allow-missing-handlers")
		}
		log.Warn("handler program cannot run; its invocations will fail (5001)", "capability", p.Subject, "problem", p.Message)
	}
	if c.Duration("ready-expiry-window") < 0 || c.Duration("ready-recheck") <= 0 {
		return cliutil.Usagef("--ready-expiry-window must not be negative and --ready-recheck must be positive")
	}
	ready := &readiness{store: store, handlers: cfg.Handlers, now: env.Now,
		window: c.Duration("ready-expiry-window"), recheck: c.Duration("ready-recheck")}
	handlers := map[string]agent.Handler{}
	for capID, h := range cfg.Handlers {
		handlers[capID] = runProgram(capID, h, log)
	}
	maxTimeout := 60 * time.Second
	if cfg.MaxTimeoutMS > 0 {
		maxTimeout = time.Duration(cfg.MaxTimeoutMS) * time.Millisecond
	}
	a, err := agent.New(agent.Config{Identity: id, Store: store, Policy: rules, Handlers: handlers,
		Now: env.Now, Rand: env.Rand, Logger: log, MaxTimeout: maxTimeout,
		Limits: amp.Limits{MaxMessageSize: int(cfg.MaxBodyBytes)}})
	if err != nil {
		return err
	}
	// The agent owns the ledger file beside the store: closed (its lock
	// released) when serve returns, after the servers stopped.
	defer a.Close()
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return cliutil.Failf("listen_failed", "cannot listen on the address").WithCause(err)
	}
	h := agent.NewHTTPHandler(a, agent.HTTPOptions{MaxBody: cfg.MaxBodyBytes, Logger: log,
		Health: func() map[string]any { return map[string]any{"generation": store.Generation()} }})
	mux := http.NewServeMux()
	mux.Handle(ReadyPath, ready)
	mux.Handle("/", h)
	srv := agent.NewHTTPServer(mux, maxTimeout+30*time.Second, log)
	sock := cfg.AdminSocket
	if sock == "" {
		sock = admin.SocketPath(db)
	}
	adminLn, err := admin.Listen(sock)
	if err != nil {
		ln.Close()
		return err
	}
	adminSrv := &http.Server{Handler: admin.NewHandler(store, log), ConnContext: admin.ConnContext,
		ReadHeaderTimeout: 5 * time.Second, IdleTimeout: time.Minute}
	defer os.Remove(sock)

	errs := make(chan error, 2)
	go func() { errs <- srv.Serve(ln) }()
	go func() { errs <- adminSrv.Serve(adminLn) }()
	url := "http://" + ln.Addr().String()
	log.Info("agent serving", "url", url, "did", id.DID, "handlers", len(handlers), "rules", len(rules), "admin_socket", sock)
	if c.Bool("json") {
		cliutil.PrintJSON(env.Stdout, map[string]any{"listening": url, "did": id.DID, "admin_socket": sock})
	} else {
		fmt.Fprintf(env.Stdout, "listening on %s as %s (admin socket %s)\n", url, id.DID, sock)
	}

	sigs := env.Signals
	if sigs == nil {
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
		defer signal.Stop(ch)
		sigs = ch
	}
	var runErr error
	select {
	case s := <-sigs:
		log.Info("shutting down", "signal", s.String())
	case <-ctx.Done():
		log.Info("shutting down", "reason", "context ended")
	case err := <-errs:
		runErr = cliutil.Failf("serve_failed", "the server stopped").WithCause(err)
	}
	sctx, cancel := context.WithTimeout(context.Background(), maxTimeout+5*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("graceful shutdown incomplete", "err", err)
	}
	adminSrv.Shutdown(sctx)
	log.Info("stopped")
	return runErr
}

// maxProgramOutput bounds what a handler program may print.
const maxProgramOutput = 16 << 20

// runProgram is the agent.Handler of an exec handler.
func runProgram(capID string, h execHandler, log *slog.Logger) agent.Handler {
	return func(ctx context.Context, params any) (any, error) {
		in, err := json.Marshal(params)
		if err != nil {
			return nil, amp.NewError(amp.CodeInternalError, "the capability failed")
		}
		cmd := exec.CommandContext(ctx, h.Command[0], h.Command[1:]...)
		cmd.Dir = h.Dir
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "AMP_CAPABILITY=" + capID, "AMP_CALLER=" + agent.CallerFrom(ctx)}
		for k, v := range h.Env {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		cmd.Stdin = bytes.NewReader(in)
		var stdout, stderr limitedBuffer
		stdout.max, stderr.max = maxProgramOutput, 64<<10
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		// Its own process group, killed whole at the deadline.
		killGroupOnCancel(cmd)
		cmd.WaitDelay = 2 * time.Second
		err = cmd.Run()
		switch {
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			log.Warn("handler program killed at its deadline", "capability", capID)
			return nil, context.DeadlineExceeded
		case ctx.Err() != nil:
			log.Warn("handler program killed: the invocation was canceled", "capability", capID)
			return nil, ctx.Err()
		case err != nil:
			log.Warn("handler program failed", "capability", capID, "err", err, "stderr", stderr.String())
			return nil, amp.Named(amp.CodeInternalError, "handler_failed", "the capability failed")
		case stdout.over:
			log.Warn("handler program printed too much", "capability", capID)
			return nil, amp.Named(amp.CodeInternalError, "handler_failed", "the capability failed")
		}
		out, err := offlineschema.ValueFromJSON(stdout.Bytes())
		if err != nil {
			log.Warn("handler program printed something that is not json", "capability", capID)
			return nil, amp.Named(amp.CodeInternalError, "invalid_result", "the capability produced an invalid result")
		}
		return out, nil
	}
}

// limitedBuffer keeps at most max bytes and notes whether more came.
type limitedBuffer struct {
	bytes.Buffer
	max  int
	over bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.max - b.Len(); len(p) > room {
		b.over = true
		if room > 0 {
			b.Buffer.Write(p[:room])
		}
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

var _ io.Writer = (*limitedBuffer)(nil)
