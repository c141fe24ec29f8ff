package main

import (
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// serveFlags is what serve's flags set beyond the config file's fields:
// the listeners and the checks they take. It is part of the resolved
// serveConfig (zero for the mcp command, whose flags do not have it).
type serveFlags struct {
	// serve is set for the serve command: its checks of listeners,
	// readiness and handler programs apply (the mcp command has none).
	serve bool
	// set names the flags given, so that Validate words a refusal as the
	// flag's (a usage error) or as the file's (invalid_config).
	set map[string]bool
	// fileMaxBody is the file's max_body_bytes before --max-body
	// overrides it (the file's value is checked either way).
	fileMaxBody int64

	unsafeListen         bool
	allowMissingHandlers bool
	catalog              bool
	catalogListen        string
	// allowHosts are the --allow-host names (hostGuard).
	allowHosts        []string
	listenTCP         string
	tlsCert, tlsKey   string
	etcdCA            string
	etcdCert, etcdKey string
	readyExpiryWindow time.Duration
	readyRecheck      time.Duration
	// replayHorizon is --replay-horizon (agent.Bounds.ReplayHorizon).
	replayHorizon time.Duration
}

// agentFlags are the flags of the store an agent serves and of its
// identity, serve's and mcp's alike (read by loadServeConfig and
// loadIdentity).
func agentFlags() []cli.Flag {
	return []cli.Flag{
		&cli.StringFlag{Name: "db", Usage: "registry store `FILE` (required)"},
		&cli.StringFlag{Name: "key", Usage: "agent key `FILE` from 'ampagent keygen' (required)"},
		cliutil.PassphraseFileFlag(),
		&cli.StringFlag{Name: "did", Usage: "agent `DID` (a did:web documented in the store; default: the key's did:key)"},
	}
}

// loadServeConfig resolves the whole serve configuration: the --config
// file, then the flags that override it, checked by Validate, then the
// defaults of what was left out. A reload (SIGHUP) calls it again.
func loadServeConfig(c *cli.Context) (*serveConfig, error) {
	return configLoader{mounts: hostMounts()}.load(c)
}

// configLoader is loadServeConfig with what it judges a handler's program
// by: the host's mounts (hostMounts), or a test's stand-in for a FUSE
// daemon or an older kernel, given here rather than swapped in a package
// variable (docs/SPEC-DECISIONS.md CLI-78, CLI-81).
type configLoader struct {
	mounts mountProbe // programWriters'
}

// load is loadServeConfig, judging handler programs by l.mounts.
func (l configLoader) load(c *cli.Context) (*serveConfig, error) {
	cfg := &serveConfig{}
	if c.IsSet("config") {
		data, err := readConfigFile(c.String("config"))
		if err != nil {
			return nil, err
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
	cfg.applyFlags(c)
	cfg.resolveHandlers(l.mounts) // before Validate: its handler check is the resolved paths'
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if cfg.MaxConns == 0 {
		cfg.MaxConns = defaultMaxConns
	}
	if cfg.PeerShare == 0 {
		cfg.PeerShare = defaultPeerShare
	}
	return cfg, nil
}

// overridingFlags are the flags that override a field of the config file.
var overridingFlags = []string{"listen", "did", "admin-socket", "metrics-listen", "max-body", "ledger", "ledger-store",
	"ledger-budget", "max-result-bytes", "max-in-flight", "max-in-flight-bytes", "max-conns", "peer-share",
	"tcp-max-in-flight", "tcp-handshake-rate", "stream-dir", "stream-max-bytes", "stream-max-params", "max-overdue-handlers", "max-programs"}

// applyFlags overrides the file's fields with the flags given and takes
// serve's own flags. It checks nothing: Validate does.
func (cfg *serveConfig) applyFlags(c *cli.Context) {
	cfg.fileMaxBody = cfg.MaxBodyBytes
	cfg.set = map[string]bool{}
	for _, f := range overridingFlags {
		cfg.set[f] = c.IsSet(f)
	}
	str := map[string]*string{"listen": &cfg.Listen, "did": &cfg.DID, "admin-socket": &cfg.AdminSocket,
		"metrics-listen": &cfg.MetricsListen, "ledger": &cfg.Ledger, "ledger-store": &cfg.LedgerStore, "stream-dir": &cfg.StreamDir}
	for name, p := range str {
		if cfg.set[name] {
			*p = c.String(name)
		}
	}
	i64 := map[string]*int64{"max-body": &cfg.MaxBodyBytes, "ledger-budget": &cfg.LedgerBudgetBytes, "max-result-bytes": &cfg.MaxResultBytes,
		"max-in-flight-bytes": &cfg.MaxInFlightBytes, "stream-max-bytes": &cfg.StreamMaxBytes, "stream-max-params": &cfg.StreamMaxParamsBytes}
	for name, p := range i64 {
		if cfg.set[name] {
			*p = c.Int64(name)
		}
	}
	ints := map[string]*int{"max-in-flight": &cfg.MaxInFlight, "max-conns": &cfg.MaxConns, "peer-share": &cfg.PeerShare, "tcp-max-in-flight": &cfg.TCPMaxInFlight,
		"tcp-handshake-rate": &cfg.TCPHandshakeRate, "max-overdue-handlers": &cfg.MaxOverdueHandlers, "max-programs": &cfg.MaxPrograms}
	for name, p := range ints {
		if cfg.set[name] {
			*p = c.Int(name)
		}
	}
	cfg.serve = c.Command != nil && c.Command.Name == "serve"
	cfg.unsafeListen, cfg.allowMissingHandlers = c.Bool("unsafe-listen"), c.Bool("allow-missing-handlers")
	cfg.catalogListen, cfg.catalog = c.String("catalog-listen"), c.Bool("catalog")
	cfg.allowHosts = c.StringSlice("allow-host")
	cfg.listenTCP, cfg.tlsCert, cfg.tlsKey = c.String("listen-tcp"), c.String("tls-cert"), c.String("tls-key")
	cfg.readyExpiryWindow, cfg.readyRecheck = c.Duration("ready-expiry-window"), c.Duration("ready-recheck")
	cfg.replayHorizon = c.Duration("replay-horizon")
	cfg.etcdCA, cfg.etcdCert, cfg.etcdKey = c.String("etcd-ca"), c.String("etcd-cert"), c.String("etcd-key")
}

// Validate checks the resolved configuration: every refusal serve makes
// before it opens anything. A setting given as a flag is refused as a
// usage error naming the flag, one of the file as invalid_config naming
// its field.
func (cfg *serveConfig) Validate() error {
	for _, check := range []func() error{cfg.validateFlags, cfg.validateFile, cfg.validateServe} {
		if err := check(); err != nil {
			return err
		}
	}
	return nil
}

// flagRange is a numeric flag's bounds (max 0: none) and its refusal.
type flagRange struct {
	name     string
	v        int64
	min, max int64
	msg      string
}

// validateFlags checks the numeric flags given and the ledger store.
func (cfg *serveConfig) validateFlags() error {
	if cfg.fileMaxBody != 0 && cfg.fileMaxBody < 1<<20 {
		return cliutil.Failf("invalid_config", "max_body_bytes must be at least 1 MiB (the binding's minimum)")
	}
	if cfg.set["max-body"] && cfg.MaxBodyBytes < 1<<20 {
		return cliutil.Usagef("--max-body must be at least 1 MiB (the binding's minimum)")
	}
	if err := cfg.validateLedgerStore(); err != nil {
		return err
	}
	for _, f := range []flagRange{
		{"ledger-budget", cfg.LedgerBudgetBytes, 1 << 20, 0, "--ledger-budget must be at least 1 MiB"},
		{"max-result-bytes", cfg.MaxResultBytes, ledger.MinReplyReserve, maxResultBytes, "--max-result-bytes must be between 1 KiB and 16 MiB"},
		{"max-in-flight", int64(cfg.MaxInFlight), 1, 0, "--max-in-flight must be at least 1"},
		{"max-in-flight-bytes", cfg.MaxInFlightBytes, 1 << 20, 0, "--max-in-flight-bytes must be at least 1 MiB"},
		{"max-conns", int64(cfg.MaxConns), 1, 0, "--max-conns must be at least 1"},
		{"peer-share", int64(cfg.PeerShare), 1, 0, "--peer-share must be at least 1"},
		{"tcp-max-in-flight", int64(cfg.TCPMaxInFlight), 1, 0, "--tcp-max-in-flight must be at least 1"},
		{"tcp-handshake-rate", int64(cfg.TCPHandshakeRate), 1, maxTCPHandshakeRate, fmt.Sprintf("--tcp-handshake-rate must be between 1 and %d", maxTCPHandshakeRate)},
		{"stream-max-bytes", cfg.StreamMaxBytes, 1 << 20, 0, "--stream-max-bytes must be at least 1 MiB"},
		{"stream-max-params", cfg.StreamMaxParamsBytes, 1 << 10, 0, "--stream-max-params must be at least 1 KiB"},
		{"max-overdue-handlers", int64(cfg.MaxOverdueHandlers), 1, 0, "--max-overdue-handlers must be at least 1"},
		{"max-programs", int64(cfg.MaxPrograms), 1, 0, "--max-programs must be at least 1"},
	} {
		if cfg.set[f.name] && (f.v < f.min || (f.max != 0 && f.v > f.max)) {
			return cliutil.Usagef("%s", f.msg)
		}
	}
	if cfg.StreamMaxBytes != 0 && cfg.StreamMaxParamsBytes > cfg.StreamMaxBytes {
		return cliutil.Usagef("the largest streamed params (--stream-max-params) cannot exceed --stream-max-bytes")
	}
	if cfg.StreamDir == "" && (cfg.StreamMaxBytes != 0 || cfg.StreamMaxParamsBytes != 0 || cfg.StreamPerSender != 0) {
		return cliutil.WithHint(cliutil.Usagef("the stream limits are for an agent that takes streams"), "give --stream-dir DIR (or \"stream_dir\" in the config file)")
	}
	return nil
}

// validateLedgerStore refuses a ledger store other than the write-ahead
// log (the deprecated --ledger-store, "ledger_store").
func (cfg *serveConfig) validateLedgerStore() error {
	switch cfg.LedgerStore {
	case "", ledger.KindWAL:
		return nil
	case "bbolt":
		const retired = "the bbolt ledger store is retired: leave %s out; the write-ahead log migrates the bbolt ledger when it opens it (docs/CLI.md)"
		if cfg.set["ledger-store"] {
			return cliutil.Usagef(retired, "--ledger-store")
		}
		return cliutil.Failf("invalid_config", retired, "ledger_store")
	default:
		if cfg.set["ledger-store"] {
			return cliutil.Usagef("--ledger-store is deprecated and must be wal (leave it out)")
		}
		return cliutil.Failf("invalid_config", "ledger_store is deprecated and must be wal (leave it out)")
	}
}

// validateFile checks the settings the config file may hold (a flag that
// overrides one was checked by validateFlags), the listen address and the
// handlers.
func (cfg *serveConfig) validateFile() error {
	for _, f := range []struct {
		name string
		v    int64
		min  int64
	}{{"ledger_budget_bytes", cfg.LedgerBudgetBytes, 1 << 20}, {"ledger_caller_bytes", cfg.LedgerCallerBytes, 64 << 10},
		{"max_in_flight", int64(cfg.MaxInFlight), 1}, {"max_in_flight_bytes", cfg.MaxInFlightBytes, 1 << 20},
		{"max_conns", int64(cfg.MaxConns), 1}, {"peer_share", int64(cfg.PeerShare), 1}, {"tcp_max_in_flight", int64(cfg.TCPMaxInFlight), 1},
		{"tcp_handshake_rate", int64(cfg.TCPHandshakeRate), 1},
		{"max_param_items", int64(cfg.MaxParamItems), 1}, {"stream_max_bytes", cfg.StreamMaxBytes, 1 << 20},
		{"stream_max_params_bytes", cfg.StreamMaxParamsBytes, 1 << 10}, {"stream_per_sender", int64(cfg.StreamPerSender), 1},
		{"max_overdue_handlers", int64(cfg.MaxOverdueHandlers), 1}, {"max_programs", int64(cfg.MaxPrograms), 1}} {
		if f.v != 0 && f.v < f.min {
			return cliutil.Failf("invalid_config", "%s must be at least %d (leave it out for the default)", f.name, f.min)
		}
	}
	if v := cfg.MaxResultBytes; v != 0 && (v < ledger.MinReplyReserve || v > maxResultBytes) {
		return cliutil.Failf("invalid_config", "max_result_bytes must be between %d and %d (leave it out for the default)", ledger.MinReplyReserve, maxResultBytes)
	}
	if cfg.TCPHandshakeRate > maxTCPHandshakeRate {
		return cliutil.Failf("invalid_config", "tcp_handshake_rate must be between 1 and %d (leave it out for the default)", maxTCPHandshakeRate)
	}
	if cfg.MaxTimeoutMS < 0 {
		return cliutil.Failf("invalid_config", "max_timeout_ms must be positive (leave it out for the default, %d)", agent.Bounds{}.WithDefaults().MaxTimeout.Milliseconds())
	}
	if cfg.Listen == "" {
		return cliutil.Usagef("give --listen ADDR (or \"listen\" in the config file)")
	}
	return validateHandlers(cfg.Handlers)
}

// validateHandlers checks the config file's "handlers".
func validateHandlers(handlers map[string]execHandler) error {
	for id, h := range handlers {
		if len(h.Command) == 0 || h.Command[0] == "" {
			return cliutil.Failf("invalid_config", "handler %s has no command", id)
		}
		if v := h.MaxResultBytes; v != 0 && (v < ledger.MinReplyReserve || v > maxResultBytes) {
			return cliutil.Failf("invalid_config", "handler %s: max_result_bytes must be between %d and %d (leave it out for the default)", id, ledger.MinReplyReserve, maxResultBytes)
		}
		if holdsNUL(h) {
			return cliutil.Failf("invalid_config", "handler %s: its command, an environment value or its dir holds a NUL, which no program can be given", id)
		}
		for k := range h.Env {
			switch {
			case k == "" || strings.ContainsAny(k, "=\x00"):
				return cliutil.Failf("invalid_config", "handler %s: an environment variable name is empty or holds '=' or NUL", id)
			case reservedEnv[k]:
				return cliutil.Failf("invalid_config", "handler %s: %s is set by the agent and cannot be configured", id, k)
			}
		}
	}
	return nil
}

// holdsNUL reports whether a string h gives its program holds a NUL: the
// kernel's argv, environment and paths end at one, and os/exec refuses
// such a string at every start, so the handler would fail every call
// while the start and /readyz said it could run (CLI-68).
func holdsNUL(h execHandler) bool {
	nul := func(s string) bool { return strings.IndexByte(s, 0) >= 0 }
	return slices.ContainsFunc(h.Command, nul) || nul(h.Dir) || slices.ContainsFunc(slices.Collect(maps.Values(h.Env)), nul)
}

// resolveHandlers gives each handler program what runProgram takes from
// the rest of the config: the agent's item budget of a result
// (max_param_items), which it checks before parsing an output (CLI-35),
// the allow rules, which say whether its log lines are a named caller's
// (CLI-36). It gives the config the slots of the programs run at once
// (max_programs, CLI-37), one set for all its handlers, the agent's
// admission hook (programSlots.admit). And each handler its program, found
// once (lookProgram), as an absolute path: a bare name is not looked up
// in PATH again at each call, where a program planted in a PATH directory
// another user may write would run in its place; one not found is
// reported missing until the next reload (CLI-38). A relative "dir" is
// made absolute, under the agent's working directory (CLI-42). m tells
// the host's mounts to the program check (programWriters).
func (cfg *serveConfig) resolveHandlers(m mountProbe) {
	cfg.slots = newProgramSlots(cfg.MaxPrograms, cfg.PeerShare)
	for id, h := range cfg.Handlers {
		h.maxItems, h.rules = cfg.MaxParamItems, cfg.rules
		if len(h.Command) > 0 && h.Command[0] != "" { // else Validate refuses it
			h.path, h.pathErr = lookProgram(h)
			if h.pathErr == nil {
				// Another user who may rewrite it, the interpreter its
				// #! line names, or the program env runs when it is
				// env, runs code as the agent's user: it does not run
				// (CLI-70, CLI-72, CLI-80).
				h.pathErr = programWriters(m, h.path, h.Command[1:], programPATH(h))
			}
		}
		if h.Dir != "" {
			if abs, err := filepath.Abs(h.Dir); err == nil {
				h.Dir = abs // under the agent's working directory, named so in the logs (CLI-42)
			}
		}
		cfg.Handlers[id] = h
	}
}

// programPATH is the PATH h's program is given (runProgram): the
// handler's "env" PATH if it sets one, else the agent's. An env on a #!
// line, or as the command, searches it (CLI-72, CLI-80).
func programPATH(h execHandler) string {
	if v, ok := h.Env["PATH"]; ok {
		return v
	}
	return os.Getenv("PATH")
}

// validateServe checks what only serve has: its listeners face the
// network only when said (--unsafe-listen), the handler programs (unless
// --allow-missing-handlers), the readiness durations, the etcd ledger's
// flags and the TCP listener's.
func (cfg *serveConfig) validateServe() error {
	if !cfg.serve {
		return nil
	}
	if cfg.MetricsListen != "" && !cliutil.Loopback(cfg.MetricsListen) && !cfg.unsafeListen {
		return cliutil.WithHint(cliutil.Failf("unsafe_listen", "the metrics listen address is not a loopback address: the metrics would be reachable from the network"),
			"listen on 127.0.0.1, put a tls proxy in front, or say --unsafe-listen")
	}
	if !cliutil.Loopback(cfg.Listen) && !cfg.unsafeListen {
		return cliutil.WithHint(cliutil.Failf("unsafe_listen", "the listen address is not a loopback address: plain http would be reachable from the network"),
			"listen on 127.0.0.1, put the agent behind a tls proxy, or say --unsafe-listen")
	}
	if err := cfg.validateCatalogListen(); err != nil {
		return err
	}
	if _, err := newHostGuard(cfg.allowHosts); err != nil {
		return err
	}
	if ps := handlerProblems(cfg.Handlers); len(ps) > 0 && !cfg.allowMissingHandlers {
		hint := "install the program (an absolute path, or a name in PATH), fix the config file's \"handlers\", or start anyway with --allow-missing-handlers"
		var exposed *exposedProgramError
		if errors.As(cfg.Handlers[ps[0].Subject].pathErr, &exposed) {
			hint = "make the program and the folders on its way the agent's user's or root's (chown) and writable by their owner alone (chmod go-w)"
			if exposed.hint != "" {
				hint = exposed.hint
			}
		}
		return cliutil.WithHint(cliutil.Failf("handler_program_missing", "the handler of %s cannot run: %s", ps[0].Subject, ps[0].Message), hint)
	}
	if cfg.readyExpiryWindow < 0 || cfg.readyRecheck <= 0 {
		return cliutil.Usagef("--ready-expiry-window must not be negative and --ready-recheck must be positive")
	}
	if most := (agent.Bounds{}).WithDefaults().MaxTTL; cfg.replayHorizon < 0 || cfg.replayHorizon > most {
		return cliutil.Usagef("--replay-horizon must be between 0 and %s (the longest ttl the agent accepts)", most)
	}
	if err := cfg.validateEtcd(); err != nil { // serve_etcd.go
		return err
	}
	return cfg.validateTCP()
}

// validateCatalogListen refuses a catalog that would face the network
// unasked (docs/SPEC-DECISIONS.md, CATALOG-5): a --catalog-listen address
// off loopback without --unsafe-listen, and --catalog alone on an agent
// listener off loopback (its AMP peers' listener: --unsafe-listen was
// said for AMP, not for the catalog).
func (cfg *serveConfig) validateCatalogListen() error {
	if cfg.catalogListen != "" {
		if !cliutil.Loopback(cfg.catalogListen) && !cfg.unsafeListen {
			return cliutil.WithHint(cliutil.Failf("unsafe_listen", "the catalog listen address is not a loopback address: the catalog would be reachable from the network"),
				"give --catalog-listen a loopback address, or say --unsafe-listen")
		}
		return nil
	}
	if cfg.catalog && !cliutil.Loopback(cfg.Listen) {
		return cliutil.WithHint(cliutil.Failf("unsafe_listen", "--catalog would serve the catalog to the agent's peers on a non-loopback listen address"),
			"give --catalog-listen 127.0.0.1:PORT (a listener of its own), or --catalog-listen ADDR --unsafe-listen to serve it on the network")
	}
	return nil
}

// validateTCP checks the TCP listener's flags: TLS files go together and
// with --listen-tcp, as its limits do (the handshake rate with TLS, CLI-98),
// and plain TCP is on loopback unless --unsafe-listen.
func (cfg *serveConfig) validateTCP() error {
	if cfg.listenTCP == "" {
		if cfg.tlsCert != "" || cfg.tlsKey != "" {
			return cliutil.Usagef("--tls-cert and --tls-key are for --listen-tcp")
		}
		for _, f := range []string{"tcp-max-in-flight", "tcp-handshake-rate"} {
			if cfg.set[f] {
				return cliutil.Usagef("--%s is for --listen-tcp", f)
			}
		}
		return nil
	}
	if cfg.tlsCert == "" && cfg.set["tcp-handshake-rate"] {
		return cliutil.Usagef("--tcp-handshake-rate is for amps:// (--tls-cert): a plain tcp connection takes no tls handshake")
	}
	if (cfg.tlsCert == "") != (cfg.tlsKey == "") {
		return cliutil.Usagef("give both --tls-cert and --tls-key, or neither")
	}
	if cfg.tlsCert == "" && !cliutil.Loopback(cfg.listenTCP) && !cfg.unsafeListen {
		return cliutil.WithHint(cliutil.Failf("unsafe_listen", "the tcp listen address is not a loopback address: plain tcp would be reachable from the network"),
			"give --tls-cert and --tls-key (amps://), listen on 127.0.0.1, or say --unsafe-listen")
	}
	return nil
}
