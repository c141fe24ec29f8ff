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
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agh"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/catalog"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/mcpbridge"
	"github.com/ampbundle/ampbundle/mirror"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport"
	"github.com/ampbundle/ampbundle/transport/amphttp"
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
	// MetricsListen is the address of the metrics listener (default none).
	MetricsListen string `json:"metrics_listen"`
	// Ledger is the idempotency ledger file (default DB.ledger.wal; a
	// bbolt ledger found there is migrated, see ledger.OpenFile).
	Ledger string `json:"ledger"`
	// LedgerStore is deprecated: "wal" (the only store) or empty; the
	// retired "bbolt" is refused with a message saying what to do.
	LedgerStore string `json:"ledger_store"`
	// LedgerBudgetBytes and LedgerCallerBytes bound the ledger (defaults
	// 256 MiB and 1/8 of the budget).
	LedgerBudgetBytes int64 `json:"ledger_budget_bytes"`
	LedgerCallerBytes int64 `json:"ledger_caller_bytes"`
	// MaxResultBytes is the largest result of a handler without a
	// "max_result_bytes" of its own, in bytes of the reply that carries it
	// (default 256 KiB, or 1/8 of ledger_caller_bytes when that is less;
	// docs/CLI.md §3.4).
	MaxResultBytes int64 `json:"max_result_bytes"`
	// MaxInFlight and MaxInFlightBytes bound the requests and request
	// bytes processed at once (defaults 64 and 64 MiB).
	MaxInFlight      int   `json:"max_in_flight"`
	MaxInFlightBytes int64 `json:"max_in_flight_bytes"`
	// MaxConns bounds the open connections of each listener (HTTP, TCP),
	// default 1024.
	MaxConns int `json:"max_conns"`
	// PeerShare: one peer (an IP address, an IPv6 /48; for request bytes, a /64) holds at most
	// 1/PeerShare of each listener's connections, requests and request
	// bytes in flight (default 4; 1 lifts the per-peer limits, for an
	// agent behind a proxy through which every caller is one peer).
	PeerShare int `json:"peer_share"`
	// TCPMaxInFlight bounds the messages the --listen-tcp listener
	// handles at once, all connections together (default 512; a peer
	// holds 1/PeerShare of them).
	TCPMaxInFlight int `json:"tcp_max_in_flight"`
	// TCPHandshakeRate bounds the TLS handshakes the --listen-tcp
	// listener begins for one peer (an IP address, an IPv6 /48), in
	// handshakes a second, 1 to maxTCPHandshakeRate (default 16, ampstcp's:
	// ampstcp.ServerOptions.PeerHandshakeRate, docs/SPEC-DECISIONS.md
	// TRANSPORT-40, CLI-98).
	TCPHandshakeRate int `json:"tcp_handshake_rate"`
	// MaxParamItems bounds the items of an invocation's params once
	// expanded (default 262,144).
	MaxParamItems int `json:"max_param_items"`
	// StreamDir enables STREAM_* for the params of a CAP_INVOKE too large
	// for one message, spooled in this directory (default: not served).
	StreamDir string `json:"stream_dir"`
	// StreamMaxBytes bounds the bytes of open streams, and those of
	// verified params waiting for their CAP_INVOKE (default 256 MiB each).
	StreamMaxBytes int64 `json:"stream_max_bytes"`
	// StreamMaxParamsBytes bounds one params stream (default 64 MiB).
	StreamMaxParamsBytes int64 `json:"stream_max_params_bytes"`
	// StreamPerSender bounds one sender's open streams and its waiting
	// params (default 4 each).
	StreamPerSender int `json:"stream_per_sender"`
	// MaxOverdueHandlers bounds the handler programs still running past
	// their invocation's deadline, in all (default 256; a principal holds
	// 1/8 of it, at least 1): agent.Bounds.MaxOverdueHandlers (AGENT-15).
	MaxOverdueHandlers int `json:"max_overdue_handlers"`
	// MaxPrograms bounds the handler programs running at once, in all
	// (default 16); a principal holds 1/4 of them, at least 1 (CLI-37).
	MaxPrograms int `json:"max_programs"`

	// rules are Allow, parsed (the file's, then --allow's).
	rules agent.Rules
	// slots bound the handler programs run at once (max_programs),
	// admitting each invocation before the agent records its run
	// (agent.Hooks.Admit, programSlots.admit); set by loadServeConfig.
	// A reload keeps the start's, which counts the programs the replaced
	// agents still run (CLI-37).
	slots *programSlots
	// serveFlags is what serve's own flags resolve (serve_config.go).
	serveFlags
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
	// MaxResultBytes is the program's largest result, in bytes of the reply
	// that carries it (default: the config's max_result_bytes).
	MaxResultBytes int64 `json:"max_result_bytes"`

	// maxItems is the agent's item budget of a result, the config's
	// max_param_items (0: offlineschema.DefaultMaxItems, the agent's
	// default), set by loadServeConfig: runProgram refuses an output over it
	// before parsing it.
	maxItems int
	// rules are the config's allow rules, set by loadServeConfig: its
	// log lines say whether they name the caller (caller=named, which
	// --log-rate never holds back) or not (caller=other), as the agent's
	// message lines do (CLI-36).
	rules agent.Rules
	// path is the program, found once when the config was loaded
	// (lookProgram), and pathErr why it was not: runProgram runs that file,
	// never a name looked up again (CLI-38).
	path    string
	pathErr error
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
--ready-expiry-window) on --listen. With --listen-tcp it also serves the
AMPS/TCP binding (docs/TRANSPORT.md): TLS (amps://) with --tls-cert and
--tls-key, plain (amp://) otherwise, which needs a loopback address unless
--unsafe-listen.

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
requests finish. SIGHUP reloads the config file's "handlers" and "allow"
(and --allow): the new config is checked as at a start and applied to new
requests, requests under way finish with the old one, and a config that
fails a check, or that changes any other setting (those apply only at a
start), is refused with a log line while the running one stays. A GET of
any other path is 404 with a JSON error object.`,
		Flags: slices.Concat(agentFlags(), []cli.Flag{
			&cli.StringFlag{Name: "listen", Usage: "`ADDR` to listen on, e.g. 127.0.0.1:8080"},
			&cli.StringFlag{Name: "config", Usage: "config `FILE` (JSON, writable by the agent's user alone): handlers, allow rules, limits"},
			&cli.StringSliceFlag{Name: "allow", Usage: "allow `CALLER=PREFIX` (repeatable), e.g. '*=org.example.'"},
			&cli.BoolFlag{Name: "unsafe-listen", Usage: "allow a non-loopback listen address for plain HTTP (and plain TCP without --tls-cert)"},
			&cli.StringFlag{Name: "admin-socket", Usage: "admin socket `PATH` (default DB.admin.sock)"},
			&cli.StringFlag{Name: "metrics-listen", Usage: "serve Prometheus metrics on GET /metrics at `ADDR`, a listener of its own (default: no metrics listener)"},
			&cli.Int64Flag{Name: "max-body", Usage: "largest accepted message in `BYTES` (default 16 MiB)"},
			&cli.BoolFlag{Name: "agh", Usage: "also serve the AGH capability discovery projection (peer card, catalog, transfer) under /agh/v0/"},
			&cli.BoolFlag{Name: "catalog", Usage: "also serve the read-only HTML catalog of the store (bundles, capabilities, schemas, compatibility, trust) under /ui/ of --listen, which must then be a loopback address"},
			&cli.StringFlag{Name: "catalog-listen", Usage: "serve the catalog (implies --catalog) at `ADDR`, a listener of its own, instead of on --listen; a loopback address unless --unsafe-listen"},
			&cli.StringSliceFlag{Name: "allow-host", Usage: "the catalog (with --catalog: all of --listen), metrics and MCP (on loopback) listeners also answer a request whose Host header names `NAME` (repeatable; default: only localhost and IP addresses, loopback ones on a loopback listener): the name of a proxy in front, refused otherwise against DNS rebinding"},
			&cli.BoolFlag{Name: "allow-missing-handlers", Usage: "start even when a handler program is missing or not executable (logged, and /readyz reports it)"},
			&cli.DurationFlag{Name: "ready-expiry-window", Value: defaultExpiryWindow, Usage: "/readyz reports not ready when an installed bundle expires within `DURATION` (0: only when expired)"},
			&cli.DurationFlag{Name: "ready-recheck", Value: defaultRecheck, Usage: "/readyz re-runs the store check at least every `DURATION` (and whenever the store changes)"},
			&cli.StringFlag{Name: "ledger", Usage: "idempotency ledger `FILE` (default DB.ledger.wal; a bbolt ledger found there is migrated once, one way), or etcd://HOST:PORT[,HOST:PORT…][/PREFIX] for one ledger shared by a fleet (docs/FLEET.md)"},
			&cli.StringFlag{Name: "ledger-store", Usage: "deprecated: wal, the only idempotency ledger `KIND` (bbolt is retired and refused)"},
			&cli.Int64Flag{Name: "ledger-budget", Usage: "largest size of the idempotency ledger in `BYTES` (default 256 MiB)"},
			&cli.DurationFlag{Name: "replay-horizon", Usage: "keep every idempotency ledger entry at least `DURATION` past its message's ts and refuse a message older than that (1003 expired, reason older_than_replay_horizon): a message id then runs once even when its sender seals it again with a longer ttl; at most 168h, which refuses nothing for age (default none: an entry is kept for its message's ttl, RFC 001)"},
			&cli.Int64Flag{Name: "max-result-bytes", Usage: "largest result of a handler, in `BYTES` of the reply that carries it, reserved in the ledger before it runs (default 256 KiB; a handler's \"max_result_bytes\" in the config file overrides it)"},
			&cli.IntFlag{Name: "max-in-flight", Usage: "most requests processed at once, `N` (default 64); beyond it 503"},
			&cli.Int64Flag{Name: "max-in-flight-bytes", Usage: "most request bytes held at once, `BYTES` (default 64 MiB); beyond it 503"},
			&cli.IntFlag{Name: "max-conns", Usage: "most connections open at once on each listener, `N` (default 1024); more wait in the kernel backlog"},
			&cli.IntFlag{Name: "max-overdue-handlers", Usage: fmt.Sprintf("most handlers still running past their invocation's deadline, `N` in all (default %d; a principal holds 1/8 of them, at least 1); beyond it an invocation is refused, retryably (5004 handlers_overdue)", agent.DefaultMaxOverdueHandlers)},
			&cli.IntFlag{Name: "max-programs", Usage: fmt.Sprintf("most handler programs running at once, `N` in all (default %d; a principal holds 1/4 of them, at least 1); beyond it an invocation is refused, retryably (5004 programs_busy)", defaultMaxPrograms)},
			&cli.IntFlag{Name: "peer-share", Usage: "one address (an IPv6 /48; for request bytes, an IPv6 /64) holds at most 1/`N` of the connections, requests and request bytes in flight (default 4); 1 behind a proxy, where every caller is one address"},
			&cli.StringFlag{Name: "stream-dir", Usage: "take the params of invocations too large for one message as streams, spooled in `DIR` (an existing directory owned by the agent's user or root, writable by its owner alone)"},
			&cli.Int64Flag{Name: "stream-max-bytes", Usage: "most bytes of open streams, and of streamed params waiting for their invocation, `BYTES` each (default 256 MiB)"},
			&cli.Int64Flag{Name: "stream-max-params", Usage: "largest streamed params of one invocation in `BYTES` (default 64 MiB)"},
			&cli.StringFlag{Name: "log-format", Value: "text", Usage: "log format: text or json"},
			&cli.StringFlag{Name: "log-level", Value: "info", Usage: "log level: debug, info, warn, error"},
			cliutil.LogRateFlag(),
			jsonFlag,
		}, tcpServeFlags(), mcpServeFlags(), etcdFlags()),
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
			log, err := newLogger(env, c)
			if err != nil {
				return err
			}
			return runServe(c.Context, env, c, cfg, log)
		},
	}
}

// maxConfigFile bounds the config file.
const maxConfigFile = 4 << 20

// maxResultBytes bounds max_result_bytes: a program prints at most
// maxProgramOutput, and a larger reply would not fit the message size a
// peer accepts by default (16 MiB).
const maxResultBytes = maxProgramOutput

// defaultMaxConns is the default of --max-conns: connections open at once
// on each listener.
const defaultMaxConns = 1024

// mountCatalog serves the catalog behind the Host guard (hostGuard): on
// mux with --catalog, or on a listener of its own with --catalog-listen,
// whose URL it returns. start
// serves that listener (its failure goes to errs), stop shuts it down
// (also when it was never started); both do nothing otherwise.
func mountCatalog(c *cli.Context, env *cliutil.Env, cfg *serveConfig, mux *http.ServeMux, store *resolver.Store, log *slog.Logger) (string, func(chan<- error), func(), error) {
	addr := c.String("catalog-listen")
	if !c.Bool("catalog") && addr == "" {
		return "", func(chan<- error) {}, func() {}, nil
	}
	catalogHandler, err := catalog.NewHandler(catalog.Options{Source: store, Now: env.Now, Logger: log, PeerShare: cfg.PeerShare})
	if err != nil {
		return "", nil, nil, err
	}
	guard, err := newHostGuard(cfg.allowHosts)
	if err != nil {
		return "", nil, nil, err
	}
	ch := guard.wrap(catalogHandler) // before the catalog reads the store
	if addr == "" {
		mux.Handle(catalog.Prefix, ch)
		return "", func(chan<- error) {}, func() {}, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, nil, cliutil.Failf("listen_failed", "cannot listen on the catalog address").WithCause(err)
	}
	srv := cliutil.SideServer(catalog.Prefix, ch)
	limited := transport.LimitListener(ln, cfg.MaxConns, cfg.MaxConns/cfg.PeerShare)
	start := func(errs chan<- error) {
		go func() {
			if err := srv.Serve(limited); !errors.Is(err, http.ErrServerClosed) {
				select {
				case errs <- err:
				default:
				}
			}
		}()
	}
	stop := func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		limited.Close()
	}
	return "http://" + ln.Addr().String() + catalog.Prefix, start, stop, nil
}

// defaultPeerShare is the default of --peer-share: one peer holds at most
// a quarter of each limit.
const defaultPeerShare = 4

// defaultTCPMaxInFlight is the default of --tcp-max-in-flight: the TCP
// listener's server-wide message slots (ampstcp's default).
const defaultTCPMaxInFlight = 512

// maxTCPHandshakeRate bounds --tcp-handshake-rate: at about 0.5 ms of
// CPU a TLS handshake (docs/SPEC-DECISIONS.md TRANSPORT-40), 2,000 a
// second from one peer take a whole core; a higher rate bounds nothing
// (CLI-98).
const maxTCPHandshakeRate = 2000

// tcpInFlight is the TCP listener's server-wide message slots.
func tcpInFlight(cfg *serveConfig) int {
	if cfg.TCPMaxInFlight > 0 {
		return cfg.TCPMaxInFlight
	}
	return defaultTCPMaxInFlight
}

// inFlight is the HTTP requests processed at once.
func inFlight(cfg *serveConfig) int {
	if cfg.MaxInFlight > 0 {
		return cfg.MaxInFlight
	}
	return amphttp.DefaultMaxInFlight
}

// inFlightBytes is the request bytes each listener may hold at once.
func inFlightBytes(cfg *serveConfig) int64 {
	if cfg.MaxInFlightBytes > 0 {
		return cfg.MaxInFlightBytes
	}
	return amphttp.DefaultMaxInFlightBytes
}

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

// durationText logs a duration as Go's duration text ("26.5ms"), in the
// JSON format too (where log/slog would write bare nanoseconds).
func durationText(_ []string, a slog.Attr) slog.Attr {
	if a.Value.Kind() == slog.KindDuration {
		return slog.String(a.Key, a.Value.Duration().String())
	}
	return a
}

// newLogger is serve's logger: --log-format, --log-level, and --log-rate
// lines of a kind per second at most (a peer can make the agent log a line
// per refused request or connection).
func newLogger(env *cliutil.Env, c *cli.Context) (*slog.Logger, error) {
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(c.String("log-level"))); err != nil {
		return nil, cliutil.Usagef("--log-level must be debug, info, warn or error")
	}
	opts := &slog.HandlerOptions{Level: lv, ReplaceAttr: durationText}
	var h slog.Handler
	switch c.String("log-format") {
	case "text":
		h = slog.NewTextHandler(env.Stderr, opts)
	case "json":
		h = slog.NewJSONHandler(env.Stderr, opts)
	default:
		return nil, cliutil.Usagef("--log-format must be text or json")
	}
	h, err := cliutil.ThrottleLog(c, h)
	if err != nil {
		return nil, err
	}
	return slog.New(h), nil
}

// Caps on what a handler program may print: its stdout (the result) and
// its stderr (kept for the log), and how much of the stderr one log line
// carries.
const (
	maxProgramOutput = 16 << 20
	maxProgramStderr = 64 << 10
	maxLoggedStderr  = 4 << 10
)

// runProgram is the agent.Handler of an exec handler.
// Its log lines name the capability, the message id and the program's run
// time; each run and failure is counted in met.
func runProgram(capID string, h execHandler, log *slog.Logger, met *metrics) agent.Handler {
	return func(ctx context.Context, params any) (any, error) {
		in, err := json.Marshal(params)
		if err != nil {
			return nil, amp.NewError(amp.CodeInternalError, "the capability failed")
		}
		principal, caller := agent.PrincipalOf(h.rules, agent.CallerFrom(ctx)), "other"
		if principal != agent.SharedPrincipal {
			caller = "named"
		}
		path, err := programPath(h)
		if err != nil {
			met.handlerRun(capID, "exit") // as a failed start
			log.Warn("handler program cannot run", "capability", capID, "id", agent.MessageIDFrom(ctx), "caller", caller, "err", err)
			return nil, amp.Named(amp.CodeInternalError, "handler_failed", "the capability failed")
		}
		// The agent admitted the invocation in a slot of its caller's
		// principal (programSlots.admit, agent.Hooks.Admit) before it
		// recorded the run, and frees it when this returns (CLI-37).
		// A program that prints more than its cap is killed at once: its
		// output is not read further, so it costs no memory.
		pctx, kill := context.WithCancel(ctx)
		defer kill()
		cmd := exec.CommandContext(pctx, path, h.Command[1:]...)
		cmd.Args[0] = h.Command[0] // argv[0] as the config wrote it
		cmd.Dir = h.Dir
		// PATH as the program check judged it (programPATH: h.Env's own,
		// else the agent's), once.
		cmd.Env = []string{"PATH=" + programPATH(h), "AMP_CAPABILITY=" + capID, "AMP_CALLER=" + agent.CallerFrom(ctx)}
		for k, v := range h.Env {
			if k != "PATH" {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		cmd.Stdin = bytes.NewReader(in)
		stdout := &cappedWriter{max: maxProgramOutput, onOver: kill}
		stderr := &cappedWriter{max: maxProgramStderr}
		cmd.Stdout, cmd.Stderr = stdout, stderr
		// Its own process group, killed whole at the deadline; on Linux
		// under a reaper that kills what left the group too (CLI-40).
		confineProgram(cmd)
		cmd.WaitDelay = 2 * time.Second
		start := time.Now()
		// The group is the handler's: what the program left running dies
		// with it, whatever the outcome, killed before the program is
		// reaped where the system allows (CLI-34, CLI-39).
		err = runInGroup(cmd)
		plog := log.With("capability", capID, "id", agent.MessageIDFrom(ctx), "caller", caller, "duration", time.Since(start))
		if reaperKilled(err) {
			// Killed by the program or after its deadline's grace: what
			// left the group may outlive the invocation (review 115).
			plog.Warn("handler program's reaper was killed; processes the program started outside its group may still run", "err", err)
		}
		switch {
		case stdout.Over():
			met.handlerRun(capID, "output_too_large")
			plog.Warn("handler program printed too much; killed", "limit", maxProgramOutput)
			return nil, amp.Named(amp.CodeInternalError, "handler_failed", "the capability failed")
		case errors.Is(ctx.Err(), context.DeadlineExceeded):
			met.handlerRun(capID, "timeout")
			plog.Warn("handler program killed at its deadline")
			return nil, context.DeadlineExceeded
		case ctx.Err() != nil:
			met.handlerRun(capID, "canceled")
			plog.Warn("handler program killed: the invocation was canceled")
			return nil, ctx.Err()
		case err != nil:
			met.handlerRun(capID, "exit")
			excerpt, cut := stderr.Excerpt(maxLoggedStderr)
			plog.Warn("handler program failed", "err", err, "stderr", excerpt, "stderr_truncated", cut)
			return nil, amp.Named(amp.CodeInternalError, "handler_failed", "the capability failed")
		}
		// Counted before it is parsed (offlineschema.ValueFromJSONBudget,
		// the config's max_param_items): a value expands to about 230
		// bytes, and the agent refuses a result over its item budget after
		// the parse anyway (CLI-35). Too deep is limit_exceeded with code
		// 0, an invalid text as the rest.
		maxItems := h.maxItems
		limit.Default(&maxItems, offlineschema.DefaultMaxItems)
		out, err := offlineschema.ValueFromJSONBudget(stdout.Bytes(), maxItems)
		switch {
		case amp.CodeOf(err) == amp.CodeInvalidMessage && amp.NameOf(err) == offlineschema.ErrLimitExceeded:
			met.handlerRun(capID, "output_too_large")
			plog.Warn("handler program printed a result of more values than the agent accepts; not parsed", "limit", maxItems)
			return nil, amp.Named(amp.CodeInternalError, "invalid_result", "the capability produced an invalid result")
		case err != nil:
			met.handlerRun(capID, "invalid_json")
			plog.Warn("handler program printed something that is not json")
			return nil, amp.Named(amp.CodeInternalError, "invalid_result", "the capability produced an invalid result")
		}
		met.handlerRun(capID, "")
		return out, nil
	}
}

// defaultMaxPrograms is the default of max_programs: each program may
// hold a 16 MiB stdout buffer and, parsed, about 60 MiB (a result at the
// default max_param_items), so 16 at once are about 1.2 GiB at worst,
// which a small host (2 cores, 4 GiB) survives; a handler's program waits
// on I/O more than it computes, so the bound is memory's, not the CPUs'
// (CLI-37).
const defaultMaxPrograms = 16

// ErrProgramsBusy names the refusal of an invocation while its caller's
// principal runs its share of the handler programs, or all of them run:
// 5004, retryable, with details {"reason": "programs_busy"}, before the
// agent recorded anything (CLI-37).
const ErrProgramsBusy amp.ErrName = "programs_busy"

// programSlots bound the handler programs running at once: in all, and
// per principal (agent.Admission.Principal, the allow rules' callers and
// agent.SharedPrincipal) 1/4 of them, at least 1, as the listeners'
// default peer share (threat: callers' slow programs, as many as the
// listeners let in at once, 64 over HTTP and 512 over TCP, each a process
// and up to 76 MiB; the unnamed callers of an open policy, one principal,
// took every slot from the named ones). Within the unnamed callers'
// share, the callers from one peer (admission.Network of the transport's
// admission.PeerOf: an IPv4 address, an IPv6 /48) hold 1/peer_share of it,
// at least 1, so that one stranger's slow programs do not take the
// share of every other stranger (CLI-41); a call no transport named a
// peer for (in process, `ampagent mcp` over stdio) is bounded by the
// share alone. An invocation beyond its share or the total is refused at
// once, retryably (ErrProgramsBusy), by the agent's admission hook, before
// its run is recorded: the sender's retry with the same message id is
// admitted afresh, and no invocation holds a listener's slot and a
// goroutine while it waits (CLI-37). The maps hold an entry only while
// one of its programs runs: at most max_programs entries each. A nil
// *programSlots bounds nothing.
type programSlots struct {
	most, share int // in all; per principal
	peerShare   int // per peer, of the unnamed callers' share
	mu          sync.Mutex
	total       int
	by          map[string]int // a principal's programs; none: absent
	byPeer      map[string]int // the unnamed callers' programs, by peer; none: absent
}

// newProgramSlots returns the slots of most programs at once (0:
// defaultMaxPrograms), a peer of the unnamed callers holding
// 1/peerShare of their share (0: defaultPeerShare).
func newProgramSlots(most, peerShare int) *programSlots {
	limit.Default(&most, defaultMaxPrograms)
	limit.Default(&peerShare, defaultPeerShare)
	share := max(most/4, 1)
	return &programSlots{most: most, share: share, peerShare: max(share/peerShare, 1), by: map[string]int{}, byPeer: map[string]int{}}
}

// admit is the agent.Hooks.Admit of the handler programs: a slot of the
// invocation's principal (and, for an unnamed caller, of its peer), or
// ErrProgramsBusy. release gives it back when the handler returned (the
// program's group reaped).
func (s *programSlots) admit(ctx context.Context, in agent.Admission) (release func(), err error) {
	if s == nil {
		return nil, nil
	}
	peer := ""
	if in.Principal == agent.SharedPrincipal {
		peer = admission.Network(admission.PeerOf(ctx))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.total >= s.most || s.by[in.Principal] >= s.share || (peer != "" && s.byPeer[peer] >= s.peerShare) {
		return nil, amp.Named(amp.CodeOverloaded, ErrProgramsBusy, "too many handler programs are running; retry later").
			WithDetails(map[string]any{"reason": string(ErrProgramsBusy)})
	}
	s.total++
	s.by[in.Principal]++
	if peer != "" {
		s.byPeer[peer]++
	}
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.total--
		if s.by[in.Principal]--; s.by[in.Principal] <= 0 {
			delete(s.by, in.Principal)
		}
		if peer != "" {
			if s.byPeer[peer]--; s.byPeer[peer] <= 0 {
				delete(s.byPeer, peer)
			}
		}
	}, nil
}

// hook is s as an agent's admission hook (nil: none).
func (s *programSlots) hook() func(context.Context, agent.Admission) (func(), error) {
	if s == nil {
		return nil
	}
	return s.admit
}

// cappedWriter keeps at most max bytes and notes whether more came; with
// onOver, it calls it and stops the copy, else it discards the rest. It is a
// plain io.Writer on purpose: it has no ReadFrom, so os/exec copies
// through Write, 32 KiB at a time, and the cap holds (a bytes.Buffer's
// ReadFrom would read everything).
type cappedWriter struct {
	buf    []byte
	max    int
	over   bool
	onOver func()
}

func (w *cappedWriter) Write(p []byte) (int, error) {
	room := w.max - len(w.buf)
	keep := min(len(p), room)
	if need := len(w.buf) + keep; need > cap(w.buf) {
		// Double, within the cap: the copies cost at most 2x the output.
		nb := make([]byte, len(w.buf), min(max(2*cap(w.buf), need, 4096), w.max))
		copy(nb, w.buf)
		w.buf = nb
	}
	w.buf = append(w.buf, p[:keep]...)
	if len(p) <= room {
		return len(p), nil
	}
	w.over = true
	if w.onOver == nil {
		return len(p), nil // discarded: the program goes on, nothing is kept
	}
	w.onOver()
	// Report an error so the copy stops: nothing more is read.
	return room, errOutputCapped
}

var errOutputCapped = errors.New("output over its cap")

// Bytes returns what was kept.
func (w *cappedWriter) Bytes() []byte { return w.buf }

// Over reports whether more than max bytes came.
func (w *cappedWriter) Over() bool { return w.over }

// Excerpt returns at most n bytes of what was kept, as text, and whether
// anything was cut.
func (w *cappedWriter) Excerpt(n int) (string, bool) {
	if len(w.buf) <= n {
		return string(w.buf), w.over
	}
	return string(w.buf[:n]), true
}

var _ io.Writer = (*cappedWriter)(nil)

// mountDiscovery adds the well-known capabilities documents (ours and
// ACDP-0007's) and, with withAGH, the AGH projection of the store's catalog
// to mux. The documents are checked first: a misconfigured one stops serve
// before it starts.
func mountDiscovery(mux *http.ServeMux, withAGH bool, cfg *serveConfig, store *resolver.Store, id amp.Identity) error {
	maxBody, inFlight := cfg.MaxBodyBytes, cfg.MaxInFlight
	if maxBody <= 0 {
		maxBody = amphttp.DefaultMaxBody
	}
	if inFlight <= 0 {
		inFlight = amphttp.DefaultMaxInFlight
	}
	extra := map[string]string{}
	if withAGH {
		extra["agh_peer_card"] = agh.PeerCardPath
		extra["agh_catalog"] = agh.CatalogPath
		extra["agh_capability"] = agh.CapabilityPrefix + "{id}"
	}
	wk, err := mirror.WellKnownHandler(mirror.AgentCapabilities(amphttp.MessagesPath, amphttp.HealthPath, maxBody, inFlight, extra), store.Generation)
	if err != nil {
		return err
	}
	mux.Handle(mirror.WellKnownPath, wk)
	// ACDP-0007 §3 beside it: registry_did is the agent's own DID
	// (docs/SPEC-DECISIONS.md MIRROR-2).
	acdp, err := mirror.ACDPHandler(mirror.AgentACDPCapabilities(id.DID, maxBody, withAGH))
	if err != nil {
		return err
	}
	mux.Handle(mirror.ACDPWellKnownPath, acdp)
	if withAGH {
		peer, _ := json.Marshal(id.DID)
		proj := &aghProjection{store: store}
		mux.Handle("/agh/v0/", agh.NewHandler(agh.HandlerOptions{
			Signer:  &agh.Signer{DID: id.DID, Key: id.SigningKey},
			Catalog: proj.capabilities,
			Card: map[string]json.RawMessage{"peer_id": peer, "profiles_supported": json.RawMessage(`["agh-network/v0"]`),
				"artifacts_supported": json.RawMessage(`["capability"]`)},
		}))
	}
	return nil
}

// aghProjection is the AGH projection of the store's catalog, built once
// for each catalog the store returns (docs/SPEC-DECISIONS.md CLI-60).
// agh.FromCatalog allocates a map and three JSON encodings for each
// capability: built at every request, one anonymous GET of a store of
// 10,000 capabilities, even one answered 404, cost 23 MiB and 20 ms of
// CPU. The store keeps its catalog until the generation changes or a
// bundle in it expires or goes stale (resolver.Store.Catalog), so the
// projection is keyed by that catalog itself, never by the generation
// alone (an expiry keeps the generation). It is built under mu: requests
// that find a new catalog wait for one build instead of each making one.
// The agh handler only reads what it is given (RichCatalog and
// TransferEnvelope copy a capability before setting its digest).
type aghProjection struct {
	store *resolver.Store
	mu    sync.Mutex
	of    *resolver.Catalog // the catalog caps were built from
	caps  []agh.Capability
}

// capabilities is agh.HandlerOptions.Catalog: the projection of the
// store's current catalog.
func (p *aghProjection) capabilities() ([]agh.Capability, error) {
	cat, err := p.store.Catalog()
	if err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if cat != p.of {
		p.of, p.caps = cat, agh.FromCatalog(cat)
	}
	return p.caps, nil
}

// reloadSignals returns the channel serve reloads its config on: SIGHUP,
// taken from now on, unless env injects its signals (tests send SIGHUP on
// Env.Signals).
func reloadSignals(env *cliutil.Env) (<-chan os.Signal, func()) {
	if env.Signals != nil {
		return nil, func() {}
	}
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGHUP)
	return ch, func() { signal.Stop(ch) }
}

// checkReload refuses a reloaded config that a reload cannot apply (next
// passed Validate, as at a start, handler programs included): settings
// other than "handlers" and "allow" are the start's, and a changed one is
// refused so the operator knows a restart is needed.
func checkReload(running, next *serveConfig) error {
	a, b := *running, *next
	a.Handlers, b.Handlers, a.Allow, b.Allow, a.rules, b.rules, a.slots, b.slots = nil, nil, nil, nil, nil, nil, nil, nil
	if !reflect.DeepEqual(a, b) {
		return cliutil.Failf("restart_needed", "the config changes settings other than \"handlers\" and \"allow\": they apply only at a start (restart the agent)")
	}
	return nil
}

// agentSwitch serves through the current agent and lets a reload replace
// it: calls already in an agent finish there, and a replaced agent is
// closed once its last call returned (its open streams end with it).
type agentSwitch struct {
	did    string
	cur    atomic.Pointer[liveAgent]
	closes sync.WaitGroup
	// log reports an agent whose close stopped waiting for its handlers.
	log *slog.Logger
}

// liveAgent is one agent of an agentSwitch; mu is held shared by each call
// in it and exclusively to close it.
type liveAgent struct {
	mu     sync.RWMutex
	a      *agent.Agent
	closed bool
	view   mcpView // the MCP bridge's agent while this one is current
}

func newAgentSwitch(a *agent.Agent, log *slog.Logger) *agentSwitch {
	s := &agentSwitch{did: a.DID(), log: log}
	s.cur.Store(s.live(a))
	return s
}

// live is a as one of s's agents.
func (s *agentSwitch) live(a *agent.Agent) *liveAgent {
	l := &liveAgent{a: a}
	l.view = mcpView{s: s, l: l}
	return l
}

// in runs f in the agent current when it starts and holds that agent open
// until f returns: a reload closes it only after. An agent replaced and
// closed between the load and the lock leads to its successor; once the
// switch itself is closed (the same closed agent loaded twice), f runs in
// that agent, which refuses at once (5002 agent_closed), rather than the
// loop spinning.
func (s *agentSwitch) in(f func(*agent.Agent)) {
	var last *liveAgent
	for {
		l := s.cur.Load()
		l.mu.RLock()
		if !l.closed || l == last {
			f(l.a)
			l.mu.RUnlock()
			return
		}
		l.mu.RUnlock()
		last = l
	}
}

// Handle implements amphttp.Handler and ampstcp.Handler.
func (s *agentSwitch) Handle(ctx context.Context, msg []byte) (reply []byte, err error) {
	s.in(func(a *agent.Agent) { reply, err = a.Handle(ctx, msg) })
	return reply, err
}

// DID is the agent's DID (a reload keeps the identity).
func (s *agentSwitch) DID() string { return s.did }

// mcpAgent is the MCP bridge's Options.Agent: the view of the agent
// current now. Its calls run through the switch, never in an agent a
// reload may close between the bridge's look-up and its call (AGENT-33);
// its tools are that agent's, and each reload gives a new view, so the
// bridge builds its tool set again.
func (s *agentSwitch) mcpAgent() mcpbridge.Agent { return &s.cur.Load().view }

// mcpView is the MCP bridge's agent while l is current (mcpAgent).
type mcpView struct {
	s *agentSwitch
	l *liveAgent
}

// InvokeLocal implements mcpbridge.Agent: like Handle, the call runs in
// the agent current when it starts, held open until it returns.
func (v *mcpView) InvokeLocal(ctx context.Context, call agent.LocalCall) (res agent.LocalResult, err error) {
	v.s.in(func(a *agent.Agent) { res, err = a.InvokeLocal(ctx, call) })
	return res, err
}

// Served implements mcpbridge.Agent: the capabilities of the view's agent.
func (v *mcpView) Served() []capability.ID { return v.l.a.Served() }

// Allows implements mcpbridge.Agent: the policy of the view's agent.
func (v *mcpView) Allows(caller, name string) bool { return v.l.a.Allows(caller, name) }

// DID implements mcpbridge.Agent.
func (v *mcpView) DID() string { return v.s.did }

// swap makes a the current agent and closes the one it replaces once
// that one's calls returned.
func (s *agentSwitch) swap(a *agent.Agent) {
	old := s.cur.Swap(s.live(a))
	s.closes.Add(1)
	go func() {
		defer s.closes.Done()
		old.retire(s.log)
	}()
}

// retire waits for l's calls and closes its agent, which waits (up to
// the longest invocation timeout) for the goroutines it started, detached
// handlers included, so that the ledger closes after them; what it
// abandoned is logged.
func (l *liveAgent) retire(log *slog.Logger) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.closed {
		l.closed = true
		if err := l.a.Close(); err != nil {
			log.Warn("agent shutdown incomplete", "err", err)
		}
	}
}

// close closes every agent: the replaced ones (once their calls returned)
// and the current one.
func (s *agentSwitch) close() {
	s.closes.Wait()
	s.cur.Load().retire(s.log)
}

// unknownRoute answers a request for a path the agent does not serve: 404
// with a JSON error object (never a CBOR body, which a person at a
// terminal or a browser cannot read), naming what is served. The path is
// not echoed.
type unknownRoute struct{}

func (unknownRoute) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(http.StatusNotFound)
	if r.Method == http.MethodHead {
		return
	}
	w.Write([]byte(unknownRouteBody))
}

// unknownRouteBody is the answer of unknownRoute.
var unknownRouteBody = `{"error":{"code":2002,"name":"no_such_route","message":"no such route: AMP messages go to POST ` +
	amphttp.MessagesPath + `; GET ` + amphttp.HealthPath + ` is liveness and GET ` + ReadyPath + ` readiness"}}` + "\n"
