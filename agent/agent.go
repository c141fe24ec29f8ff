package agent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"io"
	"log/slog"
	"runtime"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/workers"
	"github.com/ampbundle/ampbundle/resolver"
)

// Handler executes one capability invocation. params is the invocation's
// params in the JSON data model (map[string]any, []any, string, int64,
// uint64, float64, json.Number, bool, nil), already validated against the
// capability's input schema. The result must be in the same model (or
// anything amp.Marshal encodes to it); it is validated against the output
// schema before it is sent. The caller's DID is CallerFrom(ctx). A returned
// *amp.Error keeps its code and message; any other error becomes 5001 with
// a generic message. ctx ends at the invocation's timeout.
type Handler func(ctx context.Context, params any) (any, error)

// invocationKey is the context key of an invocation's caller and message
// id (one value: one allocation per invocation, not two).
type invocationKey struct{}

type invocation struct {
	caller string
	id     amp.ID
	// late is where a detached handler is: lateRunning, lateOverdue
	// (past its deadline, counted in Agent.overdue under overdueAs) or
	// lateReturned. overdueAs is set before late becomes lateOverdue.
	late      atomic.Int32
	overdueAs string
	// release ends the invocation's admission (Hooks.Admit): called once,
	// when its handler returns.
	release func()
}

// The states of invocation.late.
const (
	lateRunning = iota
	lateOverdue
	lateReturned
)

// msgID is the message id in hex, for log lines.
func (v *invocation) msgID() string { return v.id.String() }

// CallerFrom returns the authenticated DID of the caller of a handler.
func CallerFrom(ctx context.Context) string {
	v, _ := ctx.Value(invocationKey{}).(*invocation)
	if v == nil {
		return ""
	}
	return v.caller
}

// MessageIDFrom returns the id (hex) of the CAP_INVOKE a handler runs for,
// for its log lines.
func MessageIDFrom(ctx context.Context) string {
	v, _ := ctx.Value(invocationKey{}).(*invocation)
	if v == nil {
		return ""
	}
	return v.msgID()
}

// Registry is what the agent needs of the local registry; *resolver.Store
// implements it.
type Registry interface {
	Catalog() (*resolver.Catalog, error)
	Schema(ref capability.SchemaRef) (SchemaValidator, error)
	amp.DIDResolver
}

// SchemaValidator validates a JSON-model value (see internal/offlineschema).
type SchemaValidator interface {
	Validate(v any) error
}

// storeRegistry adapts *resolver.Store to Registry.
type storeRegistry struct{ *resolver.Store }

func (r storeRegistry) Schema(ref capability.SchemaRef) (SchemaValidator, error) {
	s, err := r.Store.Schema(ref)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Config configures an Agent in three groups: what the agent is and what
// it needs (Core), how much it takes from peers (Bounds), and the
// functions it reports to (Hooks). New checks all of it. The groups are
// embedded, so their fields read as the Config's own (cfg.MaxTTL,
// cfg.Logger = l); a composite literal names them:
//
//	agent.Config{
//		Core:   agent.Core{Identity: id, Store: store, Policy: rules, Handlers: handlers, Now: time.Now, Rand: rand.Reader},
//		Bounds: agent.Bounds{MaxTimeout: 2 * time.Minute},
//		Hooks:  agent.Hooks{Logger: logger},
//	}
type Config struct {
	Core
	Bounds
	Hooks
}

// Core is what an agent is and what it needs: its identity, the local
// registry, the policy, the handlers, the clock, the randomness and the
// idempotency ledger. Identity, Store, Policy, Now and Rand are required.
type Core struct {
	// Identity is the agent's DID and keys. A did:key DID must be the
	// did:key of the signing key; another DID (did:web) must have its DID
	// document in the store, listing the signing key (and the agreement key,
	// when there is one).
	Identity amp.Identity
	// Store is the local registry: descriptors, schemas, DID documents.
	Store *resolver.Store
	// Policy authorizes callers. Required: use Rules{} to deny everyone.
	Policy Policy
	// Handlers maps capability ids ("name:version") to their handlers. Each
	// id must be installed in the store when the agent is built.
	Handlers map[string]Handler
	// InlineHandlers declares that every handler honours its context:
	// it returns promptly once ctx is done. The agent then runs each
	// handler on the goroutine that called Handle, with the invocation's
	// deadline on its context, instead of on a goroutine of its own (which
	// costs a goroutine start and two context switches per invocation). A
	// handler that returns after its deadline still gets 5003 (its result
	// is dropped), but the reply waits for it. Leave it false for handlers
	// that may block regardless of their context: each then runs detached,
	// and the 5003 CAP_RESULT is sent at the deadline even when the handler
	// never returns.
	InlineHandlers bool
	// Now is the clock. Required.
	Now func() time.Time
	// Rand is the CSPRNG for message ids, nonces, cursor keys and jitter.
	// Required.
	Rand io.Reader
	// Ledger is the idempotency ledger. Nil opens the durable one beside
	// the store (ledger.OpenFile with the defaults): the write-ahead log
	// Store.Path() + ".ledger.wal", its lock file + ".ledger.wal.lock"
	// (held while the agent is open: a second agent on the same store is
	// refused), and, while a compaction runs, + ".ledger.wal.compact"; a
	// bbolt ledger an older agent left at Store.Path() + ".ledger" is
	// migrated once (one way) and kept as + ".ledger.migrated-YYYYMMDD"
	// (ledger.OpenFile). The directory of the
	// store must be writable. Limits are Bounds.LedgerLimits; Close closes
	// it. To place the files elsewhere, open the ledger yourself
	// (ledger.OpenFile with FileOptions.Path, then ledger.New) and set it
	// here. New makes the ledger
	// charge its per-caller quotas to the policy's principals
	// (Ledger.SetPrincipal with PrincipalOf): one ledger serves one agent.
	// Agents of a fleet behind one address share one ledger on etcd:
	// etcdledger.NewLedger, one per agent (docs/FLEET.md).
	Ledger *ledger.Ledger
	// registry overrides Store for tests.
	registry Registry
}

// Bounds are every limit an agent applies: message size and age,
// timeouts, result and params sizes, query pages, cursors, the ledger's
// budget and open streams. A zero field takes its default, the one
// WithDefaults fills in (New does the same); each field says it.
type Bounds struct {
	// Limits caps incoming messages (default: amp.DefaultLimits, 16 MiB a
	// message; a Limits with some fields set has amp's defaults for the
	// others).
	Limits amp.Limits
	// MaxClockSkew as in amp.ReceiverConfig (default 30 s).
	MaxClockSkew time.Duration
	// MaxTTL is the longest message ttl accepted, since replies are kept
	// for the ttl (default 7 days; at most MaxMaxTTL).
	MaxTTL time.Duration
	// ReplayHorizon (H) makes a message id run at most once even against
	// its sender re-sealing it with a longer ttl (docs/SPEC-DECISIONS.md
	// AGENT-14). The id pins a message's ts, not its ttl, and a ledger
	// entry is kept until the expiry of the copy that created it: a copy
	// of the same id sealed again with a longer ttl, replayed once that
	// entry is swept, would run its handler again.
	//
	// 0 (the default) keeps RFC 001's rule (§16.2: a reply is cached for
	// message.ttl; §8.3: no age limit, store-and-forward) and that
	// exposure: only the sender's own key can make such a copy, and it
	// could as well send a fresh id. Set, every ledger entry the agent
	// creates (CAP_INVOKE, BATCH items, streams, params streams,
	// InvokeLocal, the ledger's volatile cache alike) is kept until
	// ts + max(ttl, H + 2 s) + MaxClockSkew (ttl 0 counts as
	// MaxClockSkew; 2 s: two copies of one id differ in ts by at most
	// that, RFC 001 §8.3): a keyed InvokeLocal retried after
	// LocalKeyTTL but within H does not run again either. And every message
	// whose ts + H + MaxClockSkew is before now is refused before the
	// ledger is consulted: a signed ERROR 1003 "expired" with details
	// {"reason": "older_than_replay_horizon"}, not retryable, not
	// recorded, valid for RefusalTTL (as the receiver's own expiry check,
	// which sends nothing signed). Its cost: a ledger keeping every entry
	// for H at least, and late store-and-forward deliveries older than H
	// refused. H = MaxTTL refuses nothing for age (no ttl exceeds it) and
	// keeps every entry until ts + MaxTTL + skew. A negative H is 0 and
	// one over MaxTTL is MaxTTL (WithDefaults). A fleet sharing one
	// ledger needs the same H on every node.
	ReplayHorizon time.Duration
	// DefaultTimeout applies to an invocation without timeout_ms (default
	// 30 s, at most MaxTimeout); MaxTimeout bounds timeout_ms (default
	// 60 s, RFC 001 §16.4).
	DefaultTimeout, MaxTimeout time.Duration
	// MaxBatchDuration bounds how long a BATCH starts items (default
	// MaxTimeout): an item not started by then is answered, unprocessed,
	// by a retryable ERROR 5003 batch_deadline_exceeded with its
	// batch_index. A batch thus takes at most MaxBatchDuration plus one
	// item's timeout, not every item's timeout in turn.
	MaxBatchDuration time.Duration
	// MaxOverdueHandlers bounds the detached handlers (not
	// InlineHandlers) still running past their invocation's deadline,
	// whose CAP_RESULT 5003 was sent: in all (default 256), and per
	// principal 1/8 of it (at least 1). A principal at its share, or any
	// caller once all are used (each principal's counted up to its share:
	// a burst that overran together does not use others' room), is
	// refused a further invocation before anything runs, retryably (5004
	// ErrHandlersOverdue, not recorded), until overdue handlers return
	// (docs/SPEC-DECISIONS.md AGENT-15, AGENT-16).
	MaxOverdueHandlers int
	// MaxParamItems bounds the items of an invocation's params (and of a
	// handler's result) once expanded, all arrays and maps together
	// (default offlineschema.DefaultMaxItems, 262,144).
	MaxParamItems int
	// MaxResultBytes sets the largest result of a capability, by handler
	// id ("name:version"), in bytes of the CAP_RESULT reply that carries it
	// (the result's CBOR encoding and a few hundred bytes of envelope):
	// the ledger reserves that much before the handler runs, and a larger
	// result is answered by a final CAP_RESULT error 5001
	// result_too_large, recorded (docs/CLI.md §3.4). A capability it does
	// not name gets the ledger's Limits.ReplyReserve (LedgerLimits, or
	// Ledger's). Each is at least ledger.MinReplyReserve; New refuses one
	// that cannot fit in one caller's share (ledger.Limits.MaxReserve,
	// ErrResultExceedsShare).
	MaxResultBytes map[string]int64
	// DefaultLimit and MaxLimit bound CAP_QUERY pages (default 20, 100;
	// DefaultLimit at most MaxLimit).
	DefaultLimit, MaxLimit int
	// CursorTTL is how long a paging cursor stays valid (default 10 min).
	CursorTTL time.Duration
	// SweepEvery is how often expired ledger entries are swept, during
	// Handle (default 1 min).
	SweepEvery time.Duration
	// LedgerLimits bound the ledger New opens (default: 256 MiB, 1/8 of it
	// per caller, and ReplyReserve, the largest result recorded, reserved
	// for each running handler: 256 KiB; ledger.Limits.Resolved). A
	// Ledger set in Core has its own.
	LedgerLimits ledger.Limits
	// StreamLimits bound open streams (see StreamLimits for defaults).
	StreamLimits StreamLimits
	// ParamStreams, when set, lets callers send the params of a CAP_INVOKE
	// too large for one message as a stream first (docs/SPEC-DECISIONS.md
	// STREAM-6; stream_invoke.go). Nil: a params stream is refused.
	ParamStreams *ParamStreamLimits
}

// MaxMaxTTL is the largest Bounds.MaxTTL (a larger one is this): 100
// years, so that a message's ts plus MaxTTL, a ReplayHorizon and the
// clock skew never overflow a time.Duration.
const MaxMaxTTL = 100 * 365 * 24 * time.Hour

// WithDefaults returns b with every zero (or negative) bound set to its
// default: the bounds New applies, and the one place their defaults are
// written. A partly set Limits is left for amp to complete; MaxResultBytes
// has no default of its own (the ledger's ReplyReserve). ParamStreams
// stays nil when it is (params streams are not taken); a set one is
// copied, never changed.
func (b Bounds) WithDefaults() Bounds {
	limit.Default(&b.MaxClockSkew, amp.DefaultMaxClockSkew)
	limit.Default(&b.MaxTTL, 7*24*time.Hour)
	b.MaxTTL = min(b.MaxTTL, MaxMaxTTL)
	b.ReplayHorizon = min(max(b.ReplayHorizon, 0), b.MaxTTL)
	limit.Default(&b.MaxTimeout, 60*time.Second)
	limit.Default(&b.DefaultTimeout, 30*time.Second)
	b.DefaultTimeout = min(b.DefaultTimeout, b.MaxTimeout)
	limit.Default(&b.MaxBatchDuration, b.MaxTimeout)
	limit.Default(&b.MaxOverdueHandlers, DefaultMaxOverdueHandlers)
	limit.Default(&b.MaxParamItems, offlineschema.DefaultMaxItems)
	limit.Default(&b.MaxLimit, 100)
	limit.Default(&b.DefaultLimit, 20)
	b.DefaultLimit = min(b.DefaultLimit, b.MaxLimit)
	limit.Default(&b.CursorTTL, 10*time.Minute)
	limit.Default(&b.SweepEvery, time.Minute)
	if b.Limits == (amp.Limits{}) {
		b.Limits = amp.DefaultLimits()
	}
	b.LedgerLimits = b.LedgerLimits.Resolved()
	b.StreamLimits.setDefaults()
	if b.ParamStreams != nil {
		p := *b.ParamStreams
		p.setDefaults()
		b.ParamStreams = &p
	}
	return b
}

// LongestAnswer is the longest a Handle call takes, with b's bounds
// (defaults filled in), to answer a message that verified and was
// admitted: a BATCH, which starts items for MaxBatchDuration and may then
// run the last one started for its whole timeout, MaxTimeout (AGENT-8).
// A transport whose write deadline counts from the request must give at
// least this plus the reply's write, or a batch's reply is lost after
// every item ran (amphttp.NewServer; docs/SPEC-DECISIONS.md AGENT-13).
func (b Bounds) LongestAnswer() time.Duration {
	b = b.WithDefaults()
	return b.MaxBatchDuration + b.MaxTimeout
}

// Hooks are the functions the agent reports to: logs, metrics, the
// reports about its own outbound messages, and finished streams. Each may
// be nil.
type Hooks struct {
	// Logger receives structured logs. Nil discards them.
	Logger *slog.Logger
	// Observe, when set, is called once for each message Handle processed
	// (metrics): its type, outcome code, capability and duration. It runs
	// on the request's goroutine and must not block.
	Observe func(Observation)
	// Receipts receives the reports (ACK, PROC_OK, PROC_FAIL, ERROR,
	// PROCESSING) that arrive about the agent's own outbound messages; they
	// are never answered. client.Outbox.Receive fits here. Nil: logged only. It
	// runs in the Handle call; it must not block.
	Receipts func(ctx context.Context, r amp.Receipt)
	// Streams receives each stream (RFC 001 §6.2) once all its chunks
	// arrived and its SHA-256 verified: info describes it, content reads
	// it once (from memory, or from its spool file beyond
	// StreamLimits.SpoolThreshold), valid only during the call. A nil
	// error is answered by the stream's single ACK (verified: true); an
	// *amp.Error by an ERROR with its code, any other error by 5001
	// stream_not_accepted. It runs in the Handle call of the STREAM_END,
	// without holding a CPU slot. Nil (and no Bounds.ParamStreams):
	// STREAM_* are not served (1005). Streams of invocation params never
	// come here.
	Streams func(ctx context.Context, info StreamInfo, content io.Reader) error
	// Admit, when set, is asked whether an invocation's handler may start
	// now, before the ledger records that it runs (RFC 004 §7.2 step 7,
	// after the overdue handlers' check, AGENT-15): an embedder's bound on
	// what its handlers hold at once (processes, connections, memory),
	// per principal or in all. A non-nil error refuses the invocation
	// before anything ran or was recorded, as the agent's own refusals
	// there (AGENT-12): a retryable *amp.Error (5004 with its name and
	// details.reason) is answered as it is, any other error becomes 5004
	// not_admitted, and the sender's retry with the same message id is
	// asked again. Once admitted, release (nil: nothing) is called exactly
	// once: when the handler returns, a detached one that outlives its
	// deadline included, or at once when the run is refused after the
	// admission (no room in the ledger). It runs on the request's
	// goroutine and must not block: refuse rather than wait.
	Admit func(ctx context.Context, in Admission) (release func(), err error)
}

// Admission is an invocation Hooks.Admit is asked about.
type Admission struct {
	// Capability is the id ("name:version") of the handler that would run.
	Capability string
	// Caller is the caller's authenticated DID.
	Caller string
	// Principal is what the caller is charged to (PrincipalOf the
	// policy): shares keyed on it cannot be multiplied with fresh DIDs.
	Principal string
}

// Agent is an embedded AMP agent: give it message bytes, get signed reply
// bytes back. Safe for concurrent use.
type Agent struct {
	cfg       Config
	reg       Registry
	recv      *amp.Receiver
	send      *amp.Sender
	log       *slog.Logger
	handlers  map[capability.ID]Handler
	byName    map[string][]capability.Version // served versions per name, ascending
	servedIDs []capability.ID                 // byName's ids by name then version (Served)
	cursorKey []byte
	ledger    *ledger.Ledger
	ownLedger bool
	// spool holds the stream directory open while streams are served.
	spool *spool
	// results is the largest result of each capability (result_limit.go).
	results resultLimits
	// bridges keeps the parsed bridges of the store generation (compat.go).
	bridges bridgeCache
	// cpu holds a slot per goroutine computing in Handle (see idle),
	// handed out round robin by the transport's peer (admission.Fair).
	cpu *admission.Fair
	// nextSweep is the Unix time (ns) of the next replay sweep.
	nextSweep atomic.Int64
	// streams holds the open incoming streams.
	streams *streams
	params  *paramKeeper // nil: params streams are not taken
	// workers run detached handlers (not Config.InlineHandlers); overdue
	// counts those still running past their deadline (invoke.go).
	workers *workers.Pool
	overdue *overdueHandlers
	// life counts the Handle and Sweep calls running, sweeps the
	// background ledger sweeps: Shutdown waits for both (lifecycle.go).
	life   *lifecycle
	sweeps *sweeper
	// closeOnce closes the streams and the ledger once; closeErr is the
	// ledger's close error.
	closeOnce sync.Once
	closeErr  error
}

func misconfigured(format string, args ...any) error {
	return amp.Named(0, "misconfigured", format, args...)
}

// New checks cfg and returns an Agent. A misconfigured agent is an error,
// never a half-working value (ACDP-0007 §3.5.1). The bounds cfg leaves out
// take their defaults (Bounds.WithDefaults). Unless cfg.Ledger is set,
// New creates (or reopens) the idempotency ledger's files beside the store,
// Store.Path() + ".ledger.wal" and its lock file + ".ledger.wal.lock"
// (see Core.Ledger); it writes nothing else.
func New(cfg Config) (*Agent, error) {
	if err := cfg.Core.check(); err != nil {
		return nil, err
	}
	cfg.Bounds = cfg.Bounds.WithDefaults()
	a := &Agent{cfg: cfg, log: cfg.Logger, cpu: admission.NewFair(2*runtime.GOMAXPROCS(0), admission.DefaultPeerQueue),
		handlers: map[capability.ID]Handler{}, byName: map[string][]capability.Version{},
		workers: workers.New(0), life: newLifecycle(), sweeps: newSweeper(),
	}
	a.overdue = newOverdueHandlers(cfg.MaxOverdueHandlers)
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	a.reg = cfg.registry
	if a.reg == nil {
		a.reg = storeRegistry{cfg.Store}
	}
	for _, step := range []func() error{a.checkIdentity, a.addHandlers, a.newCodec, a.openSpool, a.openLedger} {
		if err := step(); err != nil {
			a.spool.close()
			return nil, err
		}
	}
	a.ledger.SetPrincipal(a.principal)
	var err error
	if a.results, err = newResultLimits(cfg, a.ledger); err != nil {
		a.spool.close()
		if a.ownLedger {
			a.ledger.Close()
		}
		return nil, err
	}
	return a, nil
}

// check refuses a Core that no agent can be built of, naming what is
// missing.
func (c *Core) check() error {
	for _, k := range []struct {
		bad bool
		msg string
	}{
		{c.Store == nil && c.registry == nil, "the agent needs the local registry (Store)"},
		{c.Policy == nil, "the agent needs a policy (Rules{} denies everyone)"},
		{c.Now == nil, "the agent needs a clock"},
		{c.Rand == nil, "the agent needs a source of randomness"},
		{len(c.Identity.SigningKey) != ed25519.PrivateKeySize, "the agent identity needs an ed25519 signing key"},
		{!amp.ValidDID(c.Identity.DID) || amp.BareDID(c.Identity.DID) != c.Identity.DID, "the agent identity needs a did (without fragment)"},
	} {
		if k.bad {
			return misconfigured("%s", k.msg)
		}
	}
	return nil
}

// addHandlers takes the handlers of the capabilities the registry has,
// refusing any other.
func (a *Agent) addHandlers() error {
	cat, err := a.reg.Catalog()
	if err != nil {
		return err
	}
	for idStr, h := range a.cfg.Handlers {
		id, err := capability.ParseID(idStr)
		if err != nil {
			return misconfigured("handler id %q is not a capability id", idStr)
		}
		if h == nil {
			return misconfigured("handler for %s is nil", id)
		}
		if _, ok := cat.Lookup(id); !ok {
			return misconfigured("there is a handler for %s, but the registry has no such capability (import its bundle first)", id)
		}
		a.handlers[id] = h
		a.byName[id.Name] = append(a.byName[id.Name], id.Version)
	}
	names := make([]string, 0, len(a.byName))
	for name, vs := range a.byName {
		capabilitySortVersions(vs)
		a.byName[name] = vs
		names = append(names, name)
	}
	// Served's list, by name then ascending version, made once
	// (docs/SPEC-DECISIONS.md SCALE-21).
	sort.Strings(names)
	for _, name := range names {
		for _, v := range a.byName[name] {
			a.servedIDs = append(a.servedIDs, capability.ID{Name: name, Version: v})
		}
	}
	return nil
}

// newCodec draws the cursor key and builds the receiver and the sender of
// the agent's messages.
func (a *Agent) newCodec() error {
	cfg := &a.cfg
	a.cursorKey = make([]byte, 32)
	if _, err := io.ReadFull(cfg.Rand, a.cursorKey); err != nil {
		return misconfigured("cannot read randomness for the cursor key")
	}
	var agree []*amp.AgreementKey
	if cfg.Identity.Agreement != nil {
		agree = []*amp.AgreementKey{cfg.Identity.Agreement}
	}
	shared := amp.NewSharedKeys(0)
	var err error
	if a.recv, err = amp.NewReceiver(amp.ReceiverConfig{Limits: cfg.Limits, Now: cfg.Now, MaxClockSkew: cfg.MaxClockSkew,
		DIDs: a.reg, AgreementKeys: agree, SharedKeys: shared}); err != nil {
		return err
	}
	a.send, err = amp.NewSender(amp.SenderConfig{Identity: cfg.Identity, Rand: cfg.Rand, Now: cfg.Now, DIDs: a.reg, SharedKeys: shared})
	return err
}

// openLedger takes cfg.Ledger, or opens the durable ledger beside the
// store (Core.Ledger).
func (a *Agent) openLedger() error {
	a.ledger = a.cfg.Ledger
	if a.ledger != nil {
		return nil
	}
	if a.cfg.Store == nil {
		return misconfigured("the agent needs an idempotency ledger or a store to keep one beside")
	}
	bs, _, err := ledger.OpenFile(a.cfg.Store.Path(), ledger.FileOptions{Limits: a.cfg.LedgerLimits, Now: a.cfg.Now})
	if err != nil {
		return err
	}
	if a.ledger, err = ledger.New(bs, ledger.Options{Now: a.cfg.Now}); err != nil {
		bs.Close()
		return err
	}
	a.ownLedger = true
	return nil
}

// openSpool holds the spool directory open (spool.go) and makes the
// stream and params tables that use it.
func (a *Agent) openSpool() error {
	sp, err := openSpool(a.cfg.StreamLimits, a.cfg.Streams != nil || a.cfg.ParamStreams != nil, a.cfg.Rand)
	if err != nil {
		return err
	}
	a.spool = sp
	a.streams = newStreams(a.cfg.StreamLimits, a.cfg.ParamStreams, a.principal, sp)
	a.params = newParamKeeper(a.cfg.ParamStreams, a.cfg.StreamLimits, a.principal, sp)
	return nil
}

// principal is the quota bucket of a sender (PrincipalOf the policy).
func (a *Agent) principal(sender string) string { return PrincipalOf(a.cfg.Policy, sender) }

// checkIdentity makes sure peers can verify what the agent signs.
func (a *Agent) checkIdentity() error {
	id := a.cfg.Identity
	pub := id.SigningKey.Public().(ed25519.PublicKey)
	doc, err := amp.ResolveDID(context.Background(), a.reg, id.DID)
	if err != nil {
		return misconfigured("the agent's did cannot be resolved (a did:web needs its did document in an imported bundle)")
	}
	key, err := doc.SigningKey(id.DID, a.cfg.Now())
	if err != nil || !bytes.Equal(key.PublicKey, pub) {
		return misconfigured("the agent's did document does not list the agent's signing key")
	}
	if id.Agreement != nil {
		ks, err := doc.AgreementKeys(a.cfg.Now())
		if err != nil || !bytes.Equal(ks[0].PublicKey, id.Agreement.Public[:]) {
			return misconfigured("the agent's did document does not list the agent's key agreement key first")
		}
	}
	return nil
}

// DID returns the agent's DID.
func (a *Agent) DID() string { return a.cfg.Identity.DID }

// Handle processes one incoming message and returns the signed reply.
//
// A message that does not verify (shape, version, type, fields, time,
// sender key, decryption, signature: amp.Receiver) gets no signed answer:
// nothing of it is trusted, its claimed sender included. Handle returns an
// *UnverifiedError (an *amp.Error inside) and transports answer it unsigned
// (HTTP 400 with a CBOR error body, docs/FORMAT.md).
//
// Every reply is signed by the agent, addressed to the sender, and carries
// reply_to = the request's id; a reply to an encrypted request is
// encrypted. A verified message that is not served, or refused, gets a
// signed ERROR.
//
// Each verified message goes through the idempotency ledger (package
// ledger): a duplicate (same sender, same id) gets the byte-identical
// reply, concurrent duplicates included, and a handler never runs twice.
// Once a message is claimed, its processing no longer depends on ctx: a
// caller that goes away does not change the recorded outcome; before,
// while it waits for a processing slot, a ctx that ends gives up the wait
// (5003 admission.ErrSlotWaitEnded, retryable: nothing ran, nothing is
// recorded).
//
// Once Shutdown (or Close) has begun, Handle refuses every message at
// once (5002 ErrAgentClosed, retryable), before any verification.
func (a *Agent) Handle(ctx context.Context, data []byte) ([]byte, error) {
	if !a.life.enter() {
		return nil, agentClosed()
	}
	defer a.life.leave()
	a.maybeSweep()
	start := time.Now()
	// A slot in the peer's turn, before any verification: a flood from one
	// address waits behind its own messages, not every caller's.
	ctx, done, err := a.cpu.Enter(ctx)
	if err != nil {
		return nil, err
	}
	defer done()
	m, err := a.recv.Receive(ctx, data)
	if err != nil {
		code, name := amp.CodeOf(err), amp.NameOf(err)
		a.reqLog(ctx).Info("unverified message refused", "code", uint16(code), "name", string(name))
		a.observe(Observation{Code: code, Name: name, Duration: time.Since(start)})
		return nil, &UnverifiedError{Err: amp.AsError(err)}
	}
	// A writer on its way to the ledger until it claims its ticket
	// (ledger.Ledger.Expect): counted once it verifies, never before, or
	// a flood of bad signatures waiting for slots would hold every group
	// of honest writers to its window.
	arrival := a.ledger.Expect()
	defer arrival.Done()
	// Reports are never answered, not even with an error.
	if isReport(m.Type) {
		a.handleReport(ctx, m)
		return nil, nil
	}
	// A message signed for another agent is not ours to act on: else a
	// plaintext CAP_INVOKE meant for X could be replayed to this agent and
	// run here as its sender (RFC 001 §15.3: 3001, not intended for this
	// recipient). Nothing is recorded for it.
	if !m.To.Contains(a.cfg.Identity.DID) {
		a.log.Warn("message not addressed to this agent", "from", m.From, "id", m.ID.String(), "typ", m.Type.Name())
		return a.replyError(ctx, m, amp.Named(amp.CodeUnauthorized, "not_a_recipient", "the message is not addressed to this agent"))
	}
	if m.TTL > uint64(a.cfg.MaxTTL.Milliseconds()) {
		return a.replyError(ctx, m, amp.Named(amp.CodeInvalidTimestamp, "ttl_too_long",
			"message ttl is longer than this agent keeps replies (%s)", a.cfg.MaxTTL))
	}
	// Older than the replay horizon: refused before the ledger is
	// consulted (Bounds.ReplayHorizon, AGENT-14). A BATCH container too,
	// although it is not recorded: each of its items is checked again.
	if err := a.pastHorizon(m); err != nil {
		a.reqLog(ctx).Info("message older than the replay horizon refused", "from", m.From, "id", m.ID.String(), "typ", m.Type.Name())
		return a.replyError(ctx, m, err)
	}
	if m.Type == amp.TypeBatch {
		arrival.Done() // its items are counted each
		return a.handleBatch(ctx, m)
	}
	sender := amp.BareDID(m.From)
	st, err := a.claim(ctx, m, sender, &arrival)
	arrival.Done()
	switch {
	case errors.Is(err, errLedgerUnavailable):
		return a.replyError(ctx, m, unavailable())
	case err != nil:
		return nil, err
	}
	switch st.State {
	case ledger.Done:
		a.reqLog(ctx).Info("duplicate answered from the ledger", "from", sender, "id", m.ID.String(), "typ", m.Type.Name())
		a.observe(Observation{Type: m.Type, Duplicate: true, Duration: time.Since(start)})
		if len(st.Reply) == 0 {
			return nil, nil // recorded as needing no reply (STREAM_START, STREAM-13)
		}
		return st.Reply, nil
	case ledger.Lost:
		return a.answerLost(context.WithoutCancel(ctx), m, st.Ticket)
	}
	reply, _, err := a.handleClaimed(context.WithoutCancel(ctx), m, sender, st.Ticket)
	return reply, err
}

// errLedgerUnavailable is claim's error when the ledger cannot start an
// entry; the caller answers 5002 (logged by claim).
var errLedgerUnavailable = errors.New("idempotency ledger unavailable")

// claim starts m's ledger entry for sender, waiting (without a CPU slot)
// while another copy of m is being processed: it returns a Start whose
// State is Fresh (the caller holds the ticket and runs the handler), Done
// or Lost; errLedgerUnavailable when the ledger failed; a 5003 error when
// ctx ended while waiting. A shared ledger's Start (a claim on the
// network, etcdledger) is made idle too. A copy that waits for another
// is no writer expected soon: arrival ends before it waits (the first
// copy's handler may run for minutes).
func (a *Agent) claim(ctx context.Context, m *amp.Message, sender string, arrival *ledger.Arrival) (ledger.Start, error) {
	for {
		var st ledger.Start
		var err error
		// The message's ts holds its entry for its lifetime as the
		// sender counts it, whatever this clock says (AGENT-29).
		sent := time.UnixMilli(int64(m.TS))
		if a.ledger.Shared() {
			a.idle(ctx, func() { st, err = a.ledger.StartSent(sender, m.ID, sent, a.expiry(m)) })
		} else {
			st, err = a.ledger.StartSent(sender, m.ID, sent, a.expiry(m))
		}
		if err != nil {
			a.log.Error("idempotency ledger unavailable", "err", err, "from", sender, "id", m.ID.String())
			return st, errLedgerUnavailable
		}
		if st.State != ledger.Busy {
			return st, nil
		}
		arrival.Done()
		var werr error
		// Away: the first copy may itself be parked, its slot to be
		// taken back within this peer's share, which the copies waiting
		// for it must not fill; and it is counted already, so the copy
		// keeps no peer active (admission.Fair.Away).
		a.away(ctx, func() {
			select {
			case <-st.Wait:
			case <-ctx.Done():
				werr = amp.Wrap(amp.CodeTimeout, ctx.Err(), "gave up waiting for the first copy of this message")
			}
		})
		if werr != nil {
			return st, werr
		}
	}
}

// idle runs f, which waits (for a handler, a shared ledger), without
// holding one of the agent's CPU slots, still counted against the peer of
// ctx (admission.Fair.Idle): the goroutines that may compute at once are
// bounded by cpuSlots, so that a goroutine coming back from a durable
// write (the ledger's group commit) finds a short run queue instead of
// waiting behind every caller's cryptography; coming back, it takes the
// last free slot only when its peer holds no other slot.
func (a *Agent) idle(ctx context.Context, f func()) {
	resume := a.cpu.Idle(ctx)
	defer resume()
	f()
}

// durable runs f, which waits for the ledger to make a record durable,
// without one of the agent's CPU slots, like idle; with a local ledger the
// message is parked meanwhile (park): its wait for the group commit, which
// makes every gathered record durable at once, does not count against its
// peer's share of the slots. A shared ledger's writes (a network round
// trip each) count, as idle's waits do.
func (a *Agent) durable(ctx context.Context, f func()) {
	if a.ledger.Shared() {
		a.idle(ctx, f)
		return
	}
	a.park(ctx, f)
}

// park runs f without one of the agent's CPU slots and without counting
// against its peer's share (admission.Fair.Park): for a wait that costs
// the others nothing, the local group commit. It takes a slot back within
// that share.
func (a *Agent) park(ctx context.Context, f func()) {
	resume := a.cpu.Park(ctx)
	defer resume()
	f()
}

// away runs f, which waits for another message's outcome (a copy for its
// first copy, a stream's lock), like park, but without keeping its peer
// active meanwhile (admission.Fair.Away): the message waited for is
// counted already, whichever peer sent it; parked, a copy sent from a
// second network made that network active with nothing inside, and held
// the first copy's caller, whose invocation waited in its handler, to no
// new message at all (docs/SPEC-DECISIONS.md AGENT-34).
func (a *Agent) away(ctx context.Context, f func()) {
	resume := a.cpu.Away(ctx)
	defer resume()
	f()
}

// finish records a reply in the ledger, parked while it is made durable.
func (a *Agent) finish(ctx context.Context, t *ledger.Ticket, reply []byte) (err error) {
	if !t.Durable() {
		return t.Finish(reply)
	}
	a.durable(ctx, func() { err = t.Finish(reply) })
	return err
}

// UnverifiedError is what Handle returns for a message that did not
// verify: transports answer it without a signed message.
type UnverifiedError struct{ Err *amp.Error }

// Error implements error.
func (e *UnverifiedError) Error() string { return e.Err.Error() }

// Unverified marks the error for the transports (amphttp answers it 400).
func (e *UnverifiedError) Unverified() bool { return true }

// Unwrap returns the *amp.Error.
func (e *UnverifiedError) Unwrap() error { return e.Err }

// expiry is when a message's reply may be forgotten, the one rule for
// every ledger entry the agent creates (claim is the only caller of
// ledger.Start): its ts + ttl (for ttl = 0, ts + the clock skew it is
// accepted within), plus the skew; with a ReplayHorizon H, at least
// ts + H + idTSSpread + the skew, so that every copy of the id that
// pastHorizon lets through still finds the entry (docs/SPEC-DECISIONS.md
// AGENT-14).
func (a *Agent) expiry(m *amp.Message) time.Time {
	ttl := time.Duration(m.TTL) * time.Millisecond
	if m.TTL == 0 {
		ttl = a.cfg.MaxClockSkew
	}
	if h := a.cfg.ReplayHorizon; h > 0 {
		ttl = max(ttl, h+idTSSpread)
	}
	return time.UnixMilli(int64(m.TS)).Add(ttl + a.cfg.MaxClockSkew)
}

// idTSSpread is the most the ts of two verified copies of one message id
// differ by: each is within ±1 s of the id's own timestamp (RFC 001 §8.3,
// amp.Receiver's id_timestamp_mismatch check).
const idTSSpread = 2 * amp.MaxIDSkew

// errPastHorizon names the refusal of a message older than the agent's
// ReplayHorizon (its details.reason).
const errPastHorizon amp.ErrName = "older_than_replay_horizon"

// pastHorizon refuses a message whose ts + ReplayHorizon + MaxClockSkew
// is before now (nil without a horizon): its ledger entry, if a copy of
// it ever made one, may be gone, so it must not reach the ledger. The
// refusal is the receiver's expiry refusal (1003 "expired", final) with
// details {"reason": "older_than_replay_horizon"}; ts is at most now +
// MaxClockSkew here (amp.Receiver), so the sum cannot overflow.
func (a *Agent) pastHorizon(m *amp.Message) error {
	h := a.cfg.ReplayHorizon
	if h <= 0 || !time.UnixMilli(int64(m.TS)).Add(h+a.cfg.MaxClockSkew).Before(a.cfg.Now()) {
		return nil
	}
	return amp.Named(amp.CodeInvalidTimestamp, "expired", "message is older than this agent's replay horizon (%s)", h).
		WithDetails(map[string]any{"reason": string(errPastHorizon)})
}

// answerLost answers a message whose handler (or stream hand-over) an
// earlier process began and whose reply was lost: running it again could
// run it twice, so the answer says the outcome is unknown, and is
// recorded: for a CAP_INVOKE a terminal CAP_RESULT, else an ERROR.
func (a *Agent) answerLost(ctx context.Context, m *amp.Message, t *ledger.Ticket) ([]byte, error) {
	a.log.Warn("duplicate of a message whose outcome was lost", "from", m.From, "id", m.ID.String(), "typ", m.Type.Name())
	lost := amp.Named(amp.CodeInternalError, "outcome_unknown", "an earlier attempt of this message was interrupted; it is not run again")
	typ, body, err := amp.TypeCapResult, []byte(nil), error(nil)
	if m.Type == amp.TypeCapInvoke {
		body, err = capability.NewErrorResult(lost).Encode()
	} else {
		typ = amp.TypeError
		body, err = amp.Marshal(amp.ErrorBodyOf(lost))
	}
	if err != nil {
		t.Abandon()
		return nil, amp.Wrap(amp.CodeInternalError, err, "cannot encode a result")
	}
	reply, err := a.reply(ctx, m, typ, body)
	if err != nil {
		t.Abandon()
		return nil, err
	}
	if err := a.finish(ctx, t, reply); err != nil {
		// Nothing ran here; the answer is true whether recorded or not.
		a.log.Error("outcome-unknown reply sent but not recorded in the ledger", "err", err, "from", m.From, "id", m.ID.String())
		t.Abandon()
	}
	return reply, nil
}

// handleClaimed processes a message this call holds the ledger ticket of.
func (a *Agent) handleClaimed(ctx context.Context, m *amp.Message, sender string, t *ledger.Ticket) (reply []byte, sent *amp.Message, err error) {
	start := time.Now()
	n := &note{}
	ctx = context.WithValue(ctx, noteKey{}, n)
	typ, body, perr := a.dispatch(ctx, m, t)
	// A retryable refusal before anything ran is not kept (below): a
	// refusal, signed for RefusalTTL at most.
	kept := perr == nil || !amp.CodeOf(perr).Retryable() || t.Durable()
	if kept {
		// Only a message whose outcome is recorded for its id makes its
		// peer a busy caller whose linger holds others
		// (admission.FairLingerBusy): its sender signed it anew, where
		// a copy answered from the ledger, or one refused before (or
		// retryably and not recorded), is anyone's to send again at no
		// cost (docs/SPEC-DECISIONS.md AGENT-35).
		a.cpu.Verified(ctx)
	}
	switch {
	case perr != nil:
		sent, reply, err = a.sealError(ctx, m, perr, !kept)
	case typ == noReply:
	default:
		sent, reply, err = a.sealReply(ctx, m, typ, body)
	}
	if err != nil {
		// A running ticket stays running: a retry is answered "outcome
		// unknown", never run again.
		t.Abandon()
		return nil, nil, err
	}
	code, name := n.code, n.name
	if perr != nil {
		code, name = amp.CodeOf(perr), amp.NameOf(perr)
	}
	outcome := "ok"
	if code != 0 {
		outcome = code.Name()
	}
	d := time.Since(start)
	if log := a.reqLog(ctx); log.Enabled(ctx, slog.LevelInfo) {
		// caller: whether an allow rule names the sender (its own
		// principal), for the log's readers and its throttle (a named
		// caller's lines are never held back; docs/CLI.md, "Log volume").
		caller := "other"
		if PrincipalOf(a.cfg.Policy, sender) != SharedPrincipal {
			caller = "named"
		}
		attrs := []any{"from", sender, "caller", caller, "id", m.ID.String(), "typ", m.Type.Name(), "encrypted", m.Encrypted()}
		if n.capability != "" {
			attrs = append(attrs, "capability", n.capability)
		}
		attrs = append(attrs, "code", uint16(code), "outcome", outcome)
		if name != "" {
			attrs = append(attrs, "name", string(name))
		}
		log.Info("message handled", append(attrs, "duration", d)...)
	}
	a.observe(Observation{Type: m.Type, Code: code, Name: name, Capability: n.capability, Duration: d})
	// A retryable refusal before anything ran is not kept: RFC 001 §16.3
	// has the sender retry it with the same id, and it must then be
	// evaluated again. Everything else is final for this id: durably when
	// a handler ran, in the ledger's bounded memory cache otherwise.
	if !kept {
		t.Abandon()
		return reply, sent, nil
	}
	err = a.finish(ctx, t, reply)
	if err != nil && t.Durable() && amp.NameOf(err) == ledger.ErrReplyTooLarge {
		// The reply is larger than the ledger reserved for it (its
		// capability's largest result, Config.MaxResultBytes): it is
		// withheld, and a small final result answers instead, recorded
		// (it fits the smallest reservation, thread_id echoed included).
		// The full result is never sent unrecorded; a replay gets the
		// same answer and never runs the handler again.
		a.log.Error("reply larger than its capability's largest result; answering result_too_large (raise max_result_bytes)", "from", sender, "id", m.ID.String(), "bytes", len(reply))
		var small []byte
		var smallMsg *amp.Message
		b, err := capability.NewErrorResult(resultTooLarge(a.results.ofNamed(n.capability))).Encode()
		if err == nil {
			smallMsg, small, err = a.sealReply(ctx, m, amp.TypeCapResult, b)
		}
		if err != nil {
			t.Abandon()
			return nil, nil, unavailable()
		}
		if err = a.finish(ctx, t, small); err != nil {
			t.Abandon()
			a.log.Error("error result sent but not recorded in the ledger: a retry gets outcome_unknown", "err", err, "from", sender, "id", m.ID.String())
		}
		return small, smallMsg, nil
	}
	if err != nil {
		t.Abandon()
		if t.Durable() {
			// The handler ran: its outcome is sent although the ledger
			// could not record it (a failed disk; the log refuses every
			// write until the agent restarts). A retry is answered from
			// the running entry: "outcome unknown", never a second run.
			// Answering 5002 instead would lose an outcome that exists.
			a.log.Error("reply sent but not recorded in the ledger: a retry gets outcome_unknown", "err", err, "from", sender, "id", m.ID.String())
			return reply, sent, nil
		}
		a.log.Error("cannot record a reply in the ledger", "err", err, "from", sender, "id", m.ID.String())
		return nil, nil, unavailable()
	}
	return reply, sent, nil
}

// dispatch answers one authenticated message: the reply's type and body,
// or an error for a signed ERROR reply.
func (a *Agent) dispatch(ctx context.Context, m *amp.Message, t *ledger.Ticket) (amp.Type, []byte, error) {
	switch m.Type {
	case amp.TypePing:
		return amp.TypePong, nil, nil
	case amp.TypeHello:
		h, err := amp.DecodeHello(m.Body)
		if err != nil {
			return 0, nil, err
		}
		if sel, ok := amp.SelectVersion(h, []uint64{1}); ok {
			body, err := amp.Marshal(amp.HelloAckBody{Selected: sel})
			return amp.TypeHelloAck, body, err
		}
		body, err := amp.Marshal(amp.HelloRejectBody{Reason: "this agent speaks AMP major version 1 only"})
		return amp.TypeHelloReject, body, err
	case amp.TypeCapQuery:
		return a.query(m)
	case amp.TypeCapInvoke:
		return a.invoke(ctx, m, t)
	case amp.TypeStreamStart, amp.TypeStreamData, amp.TypeStreamEnd:
		return a.stream(ctx, m, t)
	}
	return 0, nil, amp.Named(amp.CodeUnknownType, "not_served", "this agent does not serve %s messages", m.Type.Name())
}

// RefusalTTL is the longest ttl of a signed refusal the agent does not
// record: an ERROR answering a message before its ledger entry (not
// addressed to the agent, a ttl over MaxTTL, the ledger unavailable, a
// BATCH refused whole or one of its items) or a retryable refusal before
// anything ran. Such a refusal answers one delivery, at once; a replay of
// the request is evaluated again, so nothing needs the refusal to stay
// valid longer (docs/SPEC-DECISIONS.md AGENT-12).
const RefusalTTL = 5 * time.Minute

// replyTTL is the ttl of the reply to m, the Draft's: m's own ttl (a
// recorded reply is replayed to duplicates of m for as long as m is
// valid), at most MaxTTL — a ttl over it is refused, and its refusal
// must not be valid for what the requester asked — and at most
// RefusalTTL for a refusal that is not recorded. Computed in
// milliseconds, without overflow for any ttl. A ttl = 0 message is
// answered with ttl = 0 (-1 in the Draft).
func (a *Agent) replyTTL(m *amp.Message, refusal bool) time.Duration {
	if m.TTL == 0 {
		return -1
	}
	most := a.cfg.MaxTTL
	if refusal {
		most = min(most, RefusalTTL)
	}
	if m.TTL >= uint64(most.Milliseconds()) {
		return most
	}
	return time.Duration(m.TTL) * time.Millisecond
}

// reply builds and signs the reply to m (encrypted when m was).
func (a *Agent) reply(ctx context.Context, m *amp.Message, typ amp.Type, body []byte) ([]byte, error) {
	_, out, err := a.sealReply(ctx, m, typ, body)
	return out, err
}

// sealReply is reply, also returning the message it signed (what an
// in-process caller reads instead of decoding the bytes again).
func (a *Agent) sealReply(ctx context.Context, m *amp.Message, typ amp.Type, body []byte) (*amp.Message, []byte, error) {
	return a.seal(ctx, m, typ, body, a.replyTTL(m, false))
}

// seal builds and signs the reply to m with the ttl given (replyTTL).
func (a *Agent) seal(ctx context.Context, m *amp.Message, typ amp.Type, body []byte, ttl time.Duration) (*amp.Message, []byte, error) {
	sent, out, err := a.send.Seal(ctx, amp.Draft{Type: typ, To: amp.To(amp.BareDID(m.From)), TTL: ttl,
		ReplyTo: m.ID[:], ThreadID: m.ThreadID, Body: body, Encrypt: m.Encrypted()})
	if err != nil {
		a.log.Error("cannot build a reply", "err", err, "to", m.From, "id", m.ID.String())
		return nil, nil, amp.Wrap(amp.CodeInternalError, err, "cannot build the reply")
	}
	return sent, out, nil
}

// replyError answers m with a signed ERROR that is not recorded: a
// refusal, valid for RefusalTTL at most.
func (a *Agent) replyError(ctx context.Context, m *amp.Message, err error) ([]byte, error) {
	_, out, err := a.sealError(ctx, m, err, true)
	return out, err
}

// sealError answers m with a signed ERROR, also returning the message it
// signed; refusal: it is not recorded (replyTTL).
func (a *Agent) sealError(ctx context.Context, m *amp.Message, err error, refusal bool) (*amp.Message, []byte, error) {
	body, merr := amp.Marshal(amp.ErrorBodyOf(err))
	if merr != nil {
		return nil, nil, amp.Wrap(amp.CodeInternalError, merr, "cannot encode an error body")
	}
	return a.seal(ctx, m, amp.TypeError, body, a.replyTTL(m, refusal))
}

// maybeSweep drops expired ledger entries now and then, in the background
// (commits also reclaim a few each). The sweep's goroutine is the agent's:
// none starts once Shutdown has begun, and Shutdown waits for a running
// one (the ledger closes after it).
func (a *Agent) maybeSweep() {
	now := a.cfg.Now()
	next := a.nextSweep.Load()
	if now.UnixNano() < next || !a.nextSweep.CompareAndSwap(next, now.Add(a.cfg.SweepEvery).UnixNano()) {
		return
	}
	a.streams.reclaim(now)
	if !a.sweeps.start() {
		return
	}
	go func() {
		defer a.sweeps.end()
		if n, err := a.ledger.Sweep(now); err != nil {
			a.log.Warn("ledger sweep failed", "err", err)
		} else if n > 0 {
			a.log.Debug("ledger entries swept", "count", n)
		}
	}()
}

// Sweep deletes expired ledger entries now. Once Shutdown (or Close) has
// begun it refuses (ErrAgentClosed) and sweeps nothing.
func (a *Agent) Sweep() (int, error) {
	if !a.life.enter() {
		return 0, agentClosed()
	}
	defer a.life.leave()
	return a.ledger.Sweep(a.cfg.Now())
}

// Ledger returns the agent's idempotency ledger.
func (a *Agent) Ledger() *ledger.Ledger { return a.ledger }

// Close is Shutdown with a deadline of Config.MaxTimeout, the longest an
// invocation may run: by then every handler that honours its context has
// returned. It refuses new messages, waits for the calls in progress and
// the goroutines the agent started, drops the open streams (removing their
// spool files) and closes the ledger when the agent opened it
// (Config.Ledger nil). Its error names (ErrShutdownAbandoned) what was
// still running at the deadline.
func (a *Agent) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), a.cfg.MaxTimeout)
	defer cancel()
	return a.Shutdown(ctx)
}

func capabilitySortVersions(vs []capability.Version) {
	sort.Slice(vs, func(i, j int) bool { return capability.OrderOldestFirst.CompareVersions(vs[i], vs[j]) < 0 })
}
