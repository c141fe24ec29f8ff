package etcdledger

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
)

// Defaults of Options.
const (
	DefaultOpTimeout  = 2 * time.Second
	DefaultSessionTTL = 10 * time.Second
	DefaultWaitPoll   = time.Second
	// maxRetries bounds the retries of a transaction whose quota counters
	// changed under it.
	maxRetries = 16
)

// Options configure a Store.
type Options struct {
	// Endpoints are the etcd members (host:port); Prefix is the key prefix
	// (default DefaultPrefix). See ParseURL. Ignored when Client is set.
	Endpoints []string
	Prefix    string
	// TLS, when set, is the client's TLS (mutual TLS: with a certificate).
	TLS *tls.Config
	// Client is an etcd client of the embedder's; Close leaves it open.
	// Its receive limit is the embedder's: a client made here takes at
	// most recvLimit's bound (FLEET-30), and so should one passed in
	// (clientv3.Config.MaxCallRecvMsgSize).
	Client *clientv3.Client
	// Limits are the ledger's limits: PerCaller holds across the fleet,
	// Budget for the entries this process writes (docs/FLEET.md).
	Limits ledger.Limits
	// Now is the clock (required).
	Now func() time.Time
	// OpTimeout bounds every etcd call (default 2 s): slower is a refusal.
	OpTimeout time.Duration
	// SessionTTL is the lease of this process's claims (default 10 s),
	// kept alive while it runs: a process that stops for longer loses its
	// claims, and its running entries read as "outcome unknown". Every
	// node of a fleet must use one SessionTTL: a claim found under a lease
	// etcd granted for more than twice this node's own is taken for no
	// node's and deleted (docs/SPEC-DECISIONS.md FLEET-40), so a node
	// whose SessionTTL is more than twice another's has its live claims
	// deleted by that node's copies (they answer "outcome unknown"; no
	// handler runs twice).
	SessionTTL time.Duration
	// WaitPoll bounds one wait for another process's claim (default 1 s).
	WaitPoll time.Duration
	// MaxClockSkew is how far apart the clocks of the fleet's nodes may be
	// (default amp.DefaultMaxClockSkew, the agent's): every entry's lease
	// lasts this much past its bucket's end by the granting node's clock,
	// so that a node whose clock runs up to MaxClockSkew behind still finds
	// the entry while it accepts the message (docs/FLEET.md, "Clocks").
	// Negative is refused.
	MaxClockSkew time.Duration
	// Observe, when set, is called after every etcd call with its
	// operation ("claim", "mark", "finish", "unclaim", "lookup", "lease":
	// a grant, or a look at the lease of another's claim, FLEET-40),
	// duration and error (a combined transaction, FLEET-10, is one call,
	// named by the operation of its first message). It must not block.
	Observe func(op string, d time.Duration, err error)

	// recvLimit, when above 0, replaces recvLimit's bound (tests only:
	// a small answer then shows the bound at work).
	recvLimit int
	// lockWait, when above 0, replaces OpTimeout as the longest wait for
	// a principal's lock (lockBy; tests only: a lock held by the test then
	// shows the path past that wait while every etcd call keeps a
	// deadline no loaded machine reaches).
	lockWait time.Duration
}

// Store is a ledger.SharedStore on etcd v3 (docs/FORMAT.md, "Ledger on
// etcd"). Safe for concurrent use.
type Store struct {
	cli       *clientv3.Client
	ownClient bool
	prefix    string
	lim       ledger.Limits
	o         Options
	node      string
	bg        context.Context
	stop      context.CancelFunc
	// maxCounters bounds the usage counters of one principal read
	// (counterRead: FLEET-29).
	maxCounters int

	principal atomic.Pointer[func(string) string]
	sess      session
	leases    leaseCache
	cleaner   cleaner
	combine   combiner
	reads     reader
	hot       principalLocks

	mu      sync.Mutex
	claims  map[ledger.Key]claimInfo // keys this process has claimed
	running map[ledger.Key]entryRef  // entries marked or found running
	tally   map[int64]tallyBucket    // this process's entries by bucket end
	usage   ledger.Usage
	// sessionLike holds the leases of other processes' claims granted no
	// longer than twice this process's session lease, or not looked up
	// (the lookup failed, or the lease was gone), with when each was
	// looked up (sessionLease: FLEET-40, FLEET-42); at most
	// maxSessionLike.
	sessionLike map[clientv3.LeaseID]time.Time

	calls, errs atomic.Uint64
	nanos       atomic.Int64
	seq         atomic.Uint64 // numbers this process's claim values
}

// entryRef is a running entry this process may finish.
type entryRef struct {
	rev int64 // the entry's mod revision
	e   entry
	// charged: this process marked the entry running and charged its
	// cost to its own tally (a Lost entry was charged by another).
	charged bool
	// counter is the usage counter's value after the entry was marked
	// (counterRev > 0: marked here, at that revision), the first guess
	// of Finish.
	counter, counterRev int64
	// limit is the largest reply Finish records: the reservation Running
	// asked for (e.reserve, what the entry charges, may be larger).
	limit int64
	// uncounted: the entry's cost is on no usage counter (a remake whose
	// counter did not decode or kept changing, review 35), as its value
	// says (stateUncounted, also to a process that finds it Lost), so
	// Finish takes no refund off one and a remake of it nothing (FLEET-22).
	uncounted bool
}

// claimInfo is a claim of this process: its lease, its create revision
// (what names this claim, not a later one of the same key under the same
// session lease), its value (token), the running entry made with it, and
// the principal's usage counters as last read (MarkRunning's first guess
// when no entry was made with the claim).
type claimInfo struct {
	lease clientv3.LeaseID
	rev   int64
	token string
	usage *usageSnap
	// entry is the running entry made with the claim, charged to the
	// principal's counter (nil: none; Running then makes it, FLEET-11).
	entry *claimEntry
	// ran: a Running under this claim succeeded (or the entry was found
	// Lost): the handler may have run, the entry is never deleted. Until
	// then, Unclaim deletes the entry made under the claim (the handler
	// never started: FLEET-7, FLEET-11).
	ran bool
}

// claimEntry is the running entry this process made under its claim: the
// entry, its mod revision, its cost, and the counter charged with its
// value and mod revision as written (the first guess of a refund).
type claimEntry struct {
	e       entry
	rev     int64
	cost    int64
	counter string
	n, nrev int64
}

// usageSnap is a principal's usage counters at revision rev: their
// values, mod and create revisions by key, and their sum.
type usageSnap struct {
	sum, rev            int64
	vals, mods, creates map[string]int64
}

type tallyBucket struct {
	bytes   int64
	entries int
	// until is when the bucket's lease, as its latest charge asked for
	// it, ends on the clock that is never stepped (the monotonic reading
	// of time.Now): the bucket stays in the tally until then, whatever
	// the wall clock says (FLEET-27).
	until time.Time
}

// Open returns a Store over the etcd cluster of o. It does not wait for
// the cluster: an unreachable one refuses each call (Ready reports it).
func Open(o Options) (*Store, error) {
	if o.Now == nil {
		return nil, amp.Named(0, "misconfigured", "the etcd ledger needs a clock")
	}
	if o.OpTimeout <= 0 {
		o.OpTimeout = DefaultOpTimeout
	}
	if o.SessionTTL < time.Second {
		o.SessionTTL = DefaultSessionTTL
	}
	if o.WaitPoll <= 0 {
		o.WaitPoll = DefaultWaitPoll
	}
	if o.Prefix == "" {
		o.Prefix = DefaultPrefix
	}
	if o.MaxClockSkew < 0 {
		return nil, amp.Named(0, "misconfigured", "the etcd ledger's clock skew is negative")
	}
	if o.MaxClockSkew == 0 {
		o.MaxClockSkew = amp.DefaultMaxClockSkew
	}
	s := &Store{cli: o.Client, prefix: o.Prefix, lim: o.Limits.Resolved(), o: o, maxCounters: maxCountersOf(o.MaxClockSkew),
		claims: map[ledger.Key]claimInfo{}, running: map[ledger.Key]entryRef{}, tally: map[int64]tallyBucket{}}
	if s.cli == nil {
		if len(o.Endpoints) == 0 {
			return nil, amp.Named(0, "misconfigured", "the etcd ledger needs endpoints")
		}
		if o.recvLimit <= 0 {
			o.recvLimit = recvLimit(o.Prefix, s.maxCounters)
		}
		cli, err := clientv3.New(clientv3.Config{Endpoints: o.Endpoints, TLS: o.TLS, DialTimeout: o.OpTimeout,
			DialKeepAliveTime: 5 * time.Second, DialKeepAliveTimeout: o.OpTimeout, Logger: zap.NewNop(),
			MaxCallRecvMsgSize: o.recvLimit}) // FLEET-30
		if err != nil {
			return nil, amp.Wrap(amp.CodeUnavailable, err, "cannot make an etcd client")
		}
		s.cli, s.ownClient = cli, true
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return nil, amp.Wrap(amp.CodeInternalError, err, "cannot read randomness")
	}
	s.node = hex.EncodeToString(id[:])
	s.bg, s.stop = context.WithCancel(context.Background())
	s.sess.s, s.leases.s, s.cleaner.s, s.combine.s, s.reads.s = s, s, s, s, s
	s.leases.m, s.leases.flights = map[int64]clientv3.LeaseID{}, map[int64]*grant{}
	s.cleaner.q, s.cleaner.wake = map[cleanup]struct{}{}, make(chan struct{}, 1)
	s.usage.Budget = s.lim.Budget
	return s, nil
}

// recvLimit is the largest answer this store takes from etcd, its gRPC
// client's receive limit (docs/SPEC-DECISIONS.md FLEET-30), and more than
// any answer to what it asks: a combined transaction of at most
// combineMaxMembers messages (FLEET-10), each reading at most two entries
// (a reply of at most MaxReply), a principal's counters (at most
// maxCounters, FLEET-29, each at most MaxCounter: 15 digits) and
// combineMaxOps results, every key at most prefix plus 80 bytes, each
// key-value and result framed in at most 64 bytes more; plus 1 MiB. With
// DefaultPrefix and the default skew, about 110 MiB, where gRPC's default
// is 2 GiB: a member or a proxy answering more is refused before the
// client buffers it (ErrAnswerTooLarge).
func recvLimit(prefix string, maxCounters int) int {
	const frame = 64
	key := len(prefix) + 80
	entry := key + entryHeader + MaxReply + frame
	counters := maxCounters * (key + 15 + frame)
	return combineMaxMembers*(2*entry+counters+combineMaxOps*frame) + 1<<20
}

// Limits returns the store's limits, defaults filled in (ReplyReserve at
// most MaxReply).
func (s *Store) Limits() ledger.Limits {
	l := s.lim
	l.ReplyReserve = min(l.ReplyReserve, MaxReply)
	return l
}

// Node is this process's random name in its claims' values.
func (s *Store) Node() string { return s.node }

// SetPrincipal implements ledger.PrincipalStore: the per-caller share is
// charged to principal(sender) across the fleet (every agent of it must
// use the same policy).
func (s *Store) SetPrincipal(principal func(sender string) string) {
	if principal == nil {
		s.principal.Store(nil)
		return
	}
	s.principal.Store(&principal)
}

func (s *Store) principalOf(sender string) string {
	if p := s.principal.Load(); p != nil {
		return (*p)(sender)
	}
	return sender
}

// lockBy is the deadline, counted from now (the call's arrival), of the
// wait for a principal's lock: OpTimeout later (FLEET-15).
func (s *Store) lockBy() time.Time {
	if s.o.lockWait > 0 {
		return time.Now().Add(s.o.lockWait)
	}
	return time.Now().Add(s.o.OpTimeout)
}

// call runs one etcd call under the deadline, observed.
func (s *Store) call(op string, f func(ctx context.Context) error) error {
	return s.callBy(op, time.Now().Add(s.o.OpTimeout), f)
}

// callBy runs one etcd call that must answer by dl, observed.
func (s *Store) callBy(op string, dl time.Time, f func(ctx context.Context) error) error {
	ctx, cancel := context.WithDeadline(clientv3.WithRequireLeader(s.bg), dl)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	d := time.Since(start)
	s.calls.Add(1)
	s.nanos.Add(int64(d))
	if err != nil {
		s.errs.Add(1)
	}
	if s.o.Observe != nil {
		s.o.Observe(op, d, err)
	}
	if err != nil {
		var ae *amp.Error
		if errors.As(err, &ae) {
			return err
		}
		if tooLarge(err) {
			return amp.Named(amp.CodeUnavailable, ErrAnswerTooLarge, "etcd answered %s with more bytes than any answer the ledger asks for", op).WithCause(err)
		}
		return amp.Named(amp.CodeUnavailable, ledger.ErrLedgerIO, "the etcd ledger did not answer in time (%s)", op).WithCause(err)
	}
	return nil
}

// tooLarge reports whether err is the gRPC client's refusal of an answer
// over its receive limit (recvLimit): nothing of that answer was used.
// etcd's own ResourceExhausted errors (too many requests, no space) say
// otherwise.
func tooLarge(err error) bool {
	st, ok := status.FromError(err)
	return ok && st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "received message larger than max")
}

// Stats are the store's call counters since Open.
type Stats struct {
	Calls, Errors uint64
	Latency       time.Duration // the sum over the calls
	// Cleanups is the number of given-up claims waiting for etcd to
	// delete them, and of refunds of Finishes that recorded their reply
	// without the principal's lock (retried in the background while the
	// process lives). Parked clean-ups are not counted.
	Cleanups int
	// Parked is the number of clean-ups of Claims whose answer was lost
	// and that etcd has not been seen to apply: each is looked for
	// again at most once per SessionTTL until its message expires
	// (plus MaxClockSkew), and dropped then (FLEET-31, FLEET-35).
	Parked int
}

// Stats returns the store's call counters.
func (s *Store) Stats() Stats {
	return Stats{Calls: s.calls.Load(), Errors: s.errs.Load(), Latency: time.Duration(s.nanos.Load()),
		Cleanups: s.cleaner.pending(), Parked: s.cleaner.parkedN()}
}

// Ready checks that the cluster answers a linearizable read within the
// deadline (it has a leader and a quorum).
func (s *Store) Ready() error {
	return s.call("ready", func(ctx context.Context) error {
		_, err := s.cli.Get(ctx, s.prefix+"ready", clientv3.WithCountOnly())
		return err
	})
}

// Lookup implements ledger.Store.
func (s *Store) Lookup(k ledger.Key) (ledger.Record, bool, error) {
	var kv []byte
	err := s.call("lookup", func(ctx context.Context) error {
		key := keysOf(s.prefix, k).entry
		r, err := s.cli.Get(ctx, key)
		if err == nil {
			err = getFits(r, clientv3.OpGet(key)) // FLEET-28
		}
		if err == nil && len(r.Kvs) == 1 {
			kv = r.Kvs[0].Value
		}
		return err
	})
	if err != nil || kv == nil {
		return ledger.Record{}, false, err
	}
	e, err := decodeEntry(kv)
	if err != nil {
		return ledger.Record{}, false, err
	}
	return ledger.Record{Reply: e.reply, Expires: e.expires}, true, nil
}

// Sweep implements ledger.Store: etcd deletes expired entries with their
// leases; Sweep forgets this process's tally of them and deletes nothing.
func (s *Store) Sweep(now time.Time, _ int) (int, error) {
	s.mu.Lock()
	s.pruneTally(now)
	s.mu.Unlock()
	s.leases.prune(now)
	s.cleaner.forget(now)
	return 0, nil
}

// Usage implements ledger.Store: the entries and bytes this process wrote
// that have not expired, and the budget (docs/FLEET.md).
func (s *Store) Usage() ledger.Usage {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pruneTally(s.o.Now())
	return s.usage
}

// pruneTally drops the buckets whose leases ended at now (MaxClockSkew
// after their end) and, on the clock that is never stepped, at their
// until: etcd deletes a bucket's entries when its lease's seconds have
// run, so a wall clock stepped forward, even for a moment, must not empty
// the tally of entries etcd still holds, and let the node write another
// Budget beside them (FLEET-27). Callers hold s.mu.
func (s *Store) pruneTally(now time.Time) {
	mono := time.Now()
	for end, b := range s.tally {
		if end+int64(s.o.MaxClockSkew/time.Second) < now.Unix() && !mono.Before(b.until) {
			s.usage.Bytes -= b.bytes
			s.usage.Entries -= b.entries
			delete(s.tally, end)
		}
	}
}

// Close implements ledger.Store: it revokes this process's session (its
// claims go at once) and closes the client it made.
func (s *Store) Close() error {
	s.sess.revoke()
	s.stop()
	if s.ownClient {
		return s.cli.Close()
	}
	return nil
}

// NewLedger opens a Store with o and returns a ledger.Ledger over it: the
// value for agent.Config.Ledger of every agent of a fleet (one Store per
// agent process). Closing the Ledger closes the Store.
func NewLedger(o Options) (*ledger.Ledger, error) {
	s, err := Open(o)
	if err != nil {
		return nil, err
	}
	l, err := ledger.New(s, ledger.Options{Now: o.Now})
	if err != nil {
		s.Close()
		return nil, err
	}
	return l, nil
}
