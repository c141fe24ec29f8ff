package main

import (
	"context"
	"crypto/tls"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/admin"
	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport"
)

// server is one run of serve: what its steps opened, closed in reverse
// order when it returns (undo).
type server struct {
	env *cliutil.Env
	c   *cli.Context
	cfg *serveConfig
	log *slog.Logger

	id          amp.Identity
	store       *resolver.Store
	ready       *readiness
	met         *metrics
	led         *ledger.Ledger
	ledgerStore ledger.Store
	maxTimeout  time.Duration
	streams     agent.StreamLimits
	params      *agent.ParamStreamLimits
	agents      *agentSwitch

	tcpTLS               *tls.Config // --tls-cert's, read by checkFlags
	mcp                  *mcpSetup   // --mcp-listen's, checked by checkFlags, bound by listen
	ln, tcpLn, metricsLn net.Listener
	mux                  *http.ServeMux // --listen's routes; the agent's are mounted by mountAgent
	limited              *transport.Limited
	tcpURL, catalogURL   string
	startCatalog         func(chan<- error)
	srv                  *http.Server
	admin                *admin.Server
	errs                 chan error
	stopTCP, stopMCP     func(context.Context) error
	metricsSrv           *http.Server
	undo                 []func()
}

// runServe runs the agent of a validated cfg until a signal, ctx or a
// failed listener stops it.
func runServe(ctx context.Context, env *cliutil.Env, c *cli.Context, cfg *serveConfig, log *slog.Logger) error {
	s := &server{env: env, c: c, cfg: cfg, log: log, maxTimeout: agent.Bounds{}.WithDefaults().MaxTimeout,
		errs: make(chan error, 4), stopTCP: func(context.Context) error { return nil }}
	if cfg.MaxTimeoutMS > 0 {
		s.maxTimeout = time.Duration(cfg.MaxTimeoutMS) * time.Millisecond
	}
	defer s.close()
	// Every check comes before the first file or socket is made, and
	// every socket is bound (the openings that fail when an address is
	// taken) before the ledger is opened or migrated and the spool
	// cleared: a start refused at a check, an address or the admin
	// socket leaves no file behind (docs/SPEC-DECISIONS.md CLI-11). The agent's handlers are mounted
	// on the bound listeners last, and served by start.
	for _, step := range []func() error{s.checkFlags, s.openStore, s.checkAgent, s.listen, s.openAdmin, s.openLedger, s.buildAgent, s.mountAgent} {
		if err := step(); err != nil {
			return err
		}
	}
	// Signals are taken before anything is served or the start is
	// printed: a SIGTERM as soon as the listening line appears is a
	// graceful stop, never the default action (the process killed).
	sigs, stopSignals := env.StopSignals()
	s.onClose(stopSignals)
	reloads, stopReloads := reloadSignals(env)
	s.onClose(stopReloads)
	if err := s.start(); err != nil {
		return err
	}
	runErr := s.wait(ctx, sigs, reloads)
	s.shutdown()
	return runErr
}

// onClose adds f to what close undoes.
func (s *server) onClose(f func()) { s.undo = append(s.undo, f) }

// close undoes the steps, the last first.
func (s *server) close() {
	for i := len(s.undo) - 1; i >= 0; i-- {
		s.undo[i]()
	}
}

// checkFlags reads and checks what the flags name beyond the config
// (Validate): the stream directory, the TCP listener's certificate and
// --mcp-listen's authentication. It writes nothing.
func (s *server) checkFlags() error {
	var err error
	if s.streams, s.params, err = streamConfig(s.cfg); err != nil {
		return err
	}
	if root := s.streams.SpoolRoot; root != nil {
		s.onClose(func() { root.Close() })
	}
	// One peer's unnamed callers hold 1/--peer-share of the stream bytes,
	// as of its requests (1 behind a proxy: every caller is one address).
	s.streams.PeerShare = s.cfg.PeerShare
	if s.tcpTLS, err = tcpTLS(s.cfg); err != nil {
		return err
	}
	s.mcp, err = checkMCPFlags(s.c)
	return err
}

// openStore loads the identity and opens the store, which must trust a
// publisher, and not as the agent's key (checkAgentKey).
func (s *server) openStore() error {
	key, err := loadAgentKey(s.c, s.env, s.c.String("key"), s.cfg.DID)
	if err != nil {
		return err
	}
	s.id = key.id
	db := s.c.String("db")
	store, err := openAgentStore(s.env, db)
	if errors.Is(err, resolver.ErrStoreMissing) {
		return cliutil.WithHint(err, "create the store with 'ampbundle trust add PUB --db "+db+" --name NAME --scope PREFIX' and fill it with 'ampbundle import'")
	} else if err != nil {
		return err
	}
	s.store = store
	s.onClose(func() { store.Close() })
	if err := store.UpgradeError(); err != nil {
		// A damaged value held the store at schema version 2 (TSTATE-5):
		// it serves; trust changes fail until the value is repaired.
		s.log.Warn("store not upgraded: a damaged value holds it at schema version 2; it serves, trust changes fail until it is repaired (ampbundle check --db)", "error", amp.NameOf(err))
	}
	keys, err := store.TrustList()
	if err != nil {
		return err
	}
	if len(keys) == 0 {
		return cliutil.WithHint(cliutil.Failf("empty_trust_store", "the store trusts no publisher key: nothing in it can be verified"),
			"ampbundle trust add PUB --db "+db+" --name NAME --scope PREFIX")
	}
	if err := checkAgentKey(store, key, s.log); err != nil {
		return err
	}
	s.warnConfig(s.cfg)
	s.ready = &readiness{store: store, now: s.env.Now, window: s.cfg.readyExpiryWindow, recheck: s.cfg.readyRecheck, log: s.log}
	s.ready.setHandlers(s.cfg.Handlers)
	s.met = newMetrics(store, func() (int, int64, int64) {
		u := s.led.Usage()
		return u.Entries, u.Bytes, u.Budget
	})
	return nil
}

// agentLockTimeout is how long an agent waits for the store's and the
// ledger file's locks before it reports them held.
const agentLockTimeout = 250 * time.Millisecond

// openAgentStore opens the store at db for an agent, writable. The actor
// of what changes it through the admin socket is this process's user (the
// socket refuses any other).
func openAgentStore(env *cliutil.Env, db string) (*resolver.Store, error) {
	store, err := resolver.Open(db, resolver.Options{Now: env.Now, LockTimeout: agentLockTimeout, Actor: resolver.ProcessActor()})
	if errors.Is(err, resolver.ErrStoreInUse) {
		return nil, cliutil.WithHint(err, "another agent or ampbundle command holds the store")
	}
	return store, err
}

// warnConfig logs what a config allows but an operator should know: no
// allow rules, a handler program that cannot run.
func (s *server) warnConfig(cfg *serveConfig) {
	if len(cfg.rules) == 0 {
		s.log.Warn("no allow rules: every caller is refused (--allow CALLER=PREFIX)")
	}
	for _, p := range handlerProblems(cfg.Handlers) {
		s.log.Warn("handler program cannot run; its invocations will fail (5001)", "capability", p.Subject, "problem", p.Message)
	}
}

// openLedger opens the idempotency ledger: on etcd (serve_etcd.go) or
// the file beside the store.
func (s *server) openLedger() error {
	cfg, log := s.cfg, s.log
	ledgerStore, ledgerKind, err := openEtcdLedger(s.c, cfg, s.env.Now, log, s.ready, s.met)
	if ledgerStore == nil && err == nil {
		o := ledgerFileOptions(s.env, cfg)
		o.Migrated = func(old, wal string, n int) {
			log.Warn("idempotency ledger migrated from bbolt to the write-ahead log (one way); the old file is kept, delete it when you like", "kept", old, "ledger", wal, "entries", n)
		}
		ledgerStore, ledgerKind, err = ledger.OpenFile(s.c.String("db"), o)
	}
	if amp.NameOf(err) == ledger.ErrLedgerMigration {
		return cliutil.WithHint(err, "the bbolt ledger is unchanged and nothing was lost: stop any older agent that uses it, make room on its disk, and start again")
	} else if amp.NameOf(err) == ledger.ErrLedgerCorrupt {
		return cliutil.WithHint(err, "the ledger records invocations that may still be retried: if the error names the budget, start with the budget the file was written under (--ledger-budget or ledger_budget_bytes); else restore it from a backup, or move it aside only once the longest ttl the agent accepts (7 days) has passed")
	} else if err != nil {
		return cliutil.WithHint(err, "if the ledger file is in use, another agent holds it: each agent needs its own (--ledger FILE); otherwise the error says what to fix")
	}
	log.Info("idempotency ledger", "store", ledgerKind)
	s.ledgerStore = ledgerStore
	s.onClose(func() { ledgerStore.Close() })
	s.led, err = ledger.New(ledgerStore, ledger.Options{Now: s.env.Now})
	return err
}

// ledgerFileOptions open the ledger file of cfg beside the store, within
// cfg's ledger limits.
func ledgerFileOptions(env *cliutil.Env, cfg *serveConfig) ledger.FileOptions {
	return ledger.FileOptions{Now: env.Now, LockTimeout: agentLockTimeout, Path: cfg.Ledger,
		Limits: ledger.Limits{Budget: cfg.LedgerBudgetBytes, PerCaller: cfg.LedgerCallerBytes, ReplyReserve: cfg.MaxResultBytes}}
}

// checkAgent makes every check of the agent's config (agent.New's) on a
// ledger in memory with the file's limits, before the ledger is opened.
func (s *server) checkAgent() error {
	cfg := s.agentConfig(nil, s.cfg.Handlers, s.cfg.rules)
	return agentError(probeAgent(cfg, ledgerFileOptions(s.env, s.cfg).Limits))
}

// buildAgent builds the first agent, behind the switch a reload swaps.
func (s *server) buildAgent() error {
	if err := removeLeftSpool(s.streams, s.log); err != nil {
		return err
	}
	first, err := s.newAgent(s.cfg.Handlers, s.cfg.rules)
	if err != nil {
		return err
	}
	s.agents = newAgentSwitch(first, s.log)
	// The ledger file beside the store is closed (its lock released)
	// when serve returns, after the servers stopped and every agent a
	// reload replaced is closed.
	s.onClose(s.agents.close)
	return nil
}

// newAgent builds the agent of a config's handlers and allow rules;
// everything else is the start's. A reload (SIGHUP) builds a new one and
// switches to it; the ledger, the store and the listeners stay.
func (s *server) newAgent(handlerCfg map[string]execHandler, rules agent.Rules) (*agent.Agent, error) {
	a, err := agent.New(s.agentConfig(s.led, handlerCfg, rules))
	return a, agentError(err)
}

// agentConfig is the agent.Config of a config's handlers and allow rules
// on led.
func (s *server) agentConfig(led *ledger.Ledger, handlerCfg map[string]execHandler, rules agent.Rules) agent.Config {
	handlers, maxResult := programHandlers(handlerCfg, s.log, s.met)
	return agent.Config{
		Core: agent.Core{Identity: s.id, Store: s.store, Policy: rules, Handlers: handlers, Now: s.env.Now, Rand: s.env.Rand, Ledger: led},
		Bounds: agent.Bounds{MaxResultBytes: maxResult, MaxTimeout: s.maxTimeout, MaxParamItems: s.cfg.MaxParamItems, ReplayHorizon: s.cfg.replayHorizon,
			MaxOverdueHandlers: s.cfg.MaxOverdueHandlers, // 0: the agent's default
			Limits:             amp.Limits{MaxMessageSize: int(s.cfg.MaxBodyBytes)},
			StreamLimits:       s.streams, ParamStreams: s.params},
		Hooks: agent.Hooks{Observe: s.met.observe, Logger: s.log, Admit: s.cfg.slots.hook()}} // the start's slots, kept by reloads (CLI-37)
}

// agentError adds its hint to agent.New's refusal of a largest result
// that does not fit the ledger.
func agentError(err error) error {
	if amp.NameOf(err) == agent.ErrResultExceedsShare {
		return cliutil.WithHint(err, "lower the handler's \"max_result_bytes\" (or --max-result-bytes), or raise ledger_caller_bytes in the config file")
	}
	return err
}

// programHandlers are the agent's handlers of a config's handler programs
// (observed by met when it is not nil), and their max_result_bytes where
// the config sets one.
func programHandlers(handlerCfg map[string]execHandler, log *slog.Logger, met *metrics) (map[string]agent.Handler, map[string]int64) {
	handlers, maxResult := map[string]agent.Handler{}, map[string]int64{}
	for capID, h := range handlerCfg {
		handlers[capID] = runProgram(capID, h, log, met)
		if h.MaxResultBytes > 0 {
			maxResult[capID] = h.MaxResultBytes
		}
	}
	return handlers, maxResult
}
