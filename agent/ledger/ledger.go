package ledger

import (
	"bytes"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// State is what Start reports about a key.
type State uint8

const (
	// Fresh: the key was not seen. The caller holds a Ticket.
	Fresh State = iota + 1
	// Done: a reply is recorded; send Start.Reply unchanged.
	Done
	// Busy: a copy of the message is being processed in this process;
	// wait for Start.Wait to close, then call Start again.
	Busy
	// Lost: an earlier process began running the handler and stopped
	// before recording its reply. The caller holds a Ticket, must not run
	// the handler, and records an "outcome unknown" result with Finish.
	Lost
)

var stateNames = [...]string{Fresh: "fresh", Done: "done", Busy: "busy", Lost: "lost"}

// String returns the state's name.
func (s State) String() string {
	if int(s) < len(stateNames) && stateNames[s] != "" {
		return stateNames[s]
	}
	return "invalid"
}

// Errors. All are *amp.Error values; the quota errors are retryable.
const (
	// ErrFull: the ledger's byte budget is reached (5004, retryable).
	ErrFull amp.ErrName = "ledger_full"
	// ErrCallerFull: the sender's share of the ledger is used up (3005,
	// retryable).
	ErrCallerFull amp.ErrName = "caller_quota_exceeded"
	// ErrNoSpace: the disk has no room for what a new entry needs (its
	// record and its reply's reservation) (5004, retryable).
	ErrNoSpace amp.ErrName = "ledger_no_space"
	// ErrReplyTooLarge: a reply is larger than what was reserved for it
	// (Ticket.Reserve, or Limits.ReplyReserve) (5004); the caller records
	// a smaller one.
	ErrReplyTooLarge amp.ErrName = "reply_too_large"
	// ErrLedgerIO: the durable store failed (5002).
	ErrLedgerIO amp.ErrName = "ledger_unavailable"
	// ErrLedgerMigration: a retired bbolt ledger could not be migrated to
	// the write-ahead log (in use, damaged, or an I/O error); nothing was
	// lost and the old file is unchanged (5002).
	ErrLedgerMigration amp.ErrName = "ledger_migration_failed"
	// ErrTicketUsed: a Ticket was used after it was finished or abandoned
	// (a programming error).
	ErrTicketUsed amp.ErrName = "ticket_used"
)

// NoRoom reports whether err is the ledger's refusal for want of room:
// the budget (ErrFull), the sender's share (ErrCallerFull), the disk
// (ErrNoSpace) or a reply over its reservation (ErrReplyTooLarge). From
// Running it comes before the handler runs, and nothing was written.
func NoRoom(err error) bool {
	switch amp.NameOf(err) {
	case ErrFull, ErrCallerFull, ErrNoSpace, ErrReplyTooLarge:
		return true
	}
	return false
}

// Key names one message: the sender's bare DID and the message id.
type Key struct {
	Sender string
	ID     [16]byte
}

func (k Key) bytes() []byte {
	b := make([]byte, 0, len(k.Sender)+17)
	b = append(b, k.Sender...)
	b = append(b, 0)
	return append(b, k.ID[:]...)
}

// Record is a key's durable entry.
type Record struct {
	// Reply is nil while the handler runs (state running), the reply
	// bytes once done.
	Reply   []byte
	Expires time.Time
}

// Store is the durable part of the ledger: one interface, so that another
// backend (a replicated one) can replace the log without touching
// the agent. Implementations must be safe for concurrent use; the Ledger
// never calls MarkRunning or Finish twice concurrently for one key.
type Store interface {
	// Lookup returns k's record, if there is one that has not expired.
	Lookup(k Key) (Record, bool, error)
	// MarkRunning records, durably before it returns, that k's handler is
	// about to run, and reserves the room of its reply: Limits.ReplyReserve
	// bytes of the budget and of the sender's share (and, for the
	// write-ahead log, of the disk). It refuses with ErrFull, ErrCallerFull
	// or ErrNoSpace, having written nothing, when that room cannot be had.
	// A SharedStore may have recorded the entry at Claim already (see
	// SharedStore): MarkRunning then only confirms it.
	MarkRunning(k Key, expires time.Time) error
	// Finish records k's reply durably before it returns, and gives back
	// what of the reservation the reply does not use. k was marked running.
	// A reply larger than the reservation is refused (ErrReplyTooLarge);
	// one within it is refused only for an I/O error the disk reports.
	Finish(k Key, reply []byte) error
	// Sweep deletes the entries expired at now (at most max; max <= 0
	// means all) and returns how many it deleted.
	Sweep(now time.Time, max int) (int, error)
	// Usage reports the accounted bytes and entries.
	Usage() Usage
	// Close releases the store.
	Close() error
}

// SharedStore is a Store that several processes share (the agents of a
// fleet on one etcd cluster, package etcdledger): Start claims a key
// across all of them, so that one process checks and runs a message while
// the copies that reach the others wait for its reply. Implementations
// are safe for concurrent use.
type SharedStore interface {
	Store
	// Claim claims k for this process, or says why it cannot. Claimed:
	// Found is false (k is fresh), or Found with a running Record whose
	// claimer is gone (Lost: the outcome is unknown). Not claimed: Found
	// with a reply (done), or Wait, set while another process holds k,
	// which closes when that may have changed (within a bounded time: the
	// caller then claims again). An error claims nothing that outlives
	// the store's own undoing of it. A fresh claim may itself be the
	// running record, charged to the quotas with the default reservation
	// and kept until expires (etcdledger does so): MarkRunning then
	// writes nothing, Unclaim deletes it, and a process that dies
	// holding the claim leaves k Lost even if its handler never started.
	Claim(k Key, expires time.Time) (ClaimResult, error)
	// Unclaim gives up this process's claim on k, if it still holds one
	// (Finish of a running entry has given it up already); the record of
	// a claim whose MarkRunning never succeeded goes with it (the
	// handler never started), so a message refused by its checks leaves
	// none.
	Unclaim(k Key)
}

// ClaimResult is SharedStore.Claim's answer.
type ClaimResult struct {
	Record Record
	Found  bool
	// Wait is set when another process holds the key.
	Wait <-chan struct{}
}

// ReservingStore is a Store that reserves, for each running entry, the
// room of a reply of the size it is given (WALStore and
// MemoryStore are): a capability whose results are larger or smaller than
// the default reserves what it needs, no more.
type ReservingStore interface {
	Store
	// MarkRunningWithin is MarkRunning with a reservation of reserve bytes
	// for the entry's reply instead of Limits.ReplyReserve (reserve <= 0:
	// that default; less than MinReplyReserve: MinReplyReserve). Finish
	// then records a reply of at most reserve bytes, and refuses a larger
	// one (ErrReplyTooLarge).
	MarkRunningWithin(k Key, expires time.Time, reserve int64) error
	// Limits returns the store's limits, defaults filled in.
	Limits() Limits
}

// Usage is what a Store holds.
type Usage struct {
	Entries int   `json:"entries"`
	Bytes   int64 `json:"bytes"`
	Budget  int64 `json:"budget"`
}

// Options configures a Ledger.
type Options struct {
	// VolatileBytes bounds the in-memory cache of replies that were not
	// written durably (default 8 MiB); VolatileEntries bounds its count
	// (default 65,536). One principal (see SetPrincipal) holds at most
	// 1/8 of each.
	VolatileBytes   int64
	VolatileEntries int
	// Now is the clock (required): volatile entries expire with their
	// message.
	Now func() time.Time
}

// Ledger is the idempotency state machine over a Store (see the package
// documentation for its states). Safe for concurrent use.
type Ledger struct {
	store Store
	opts  Options

	// open counts the tickets out, inHandler those whose handler runs
	// (from a successful Running, as Ticket.Handling then says, until
	// Finish), and coming the messages on their way to a ticket (Expect)
	// (active).
	open, inHandler, coming atomic.Int64

	mu        sync.Mutex
	claimed   map[Key]chan struct{}
	volatile  volatileCache
	principal func(sender string) string
}

// New returns a Ledger over store.
func New(store Store, opts Options) (*Ledger, error) {
	if store == nil {
		return nil, amp.Named(0, "misconfigured", "the ledger needs a store")
	}
	if opts.Now == nil {
		return nil, amp.Named(0, "misconfigured", "the ledger needs a clock")
	}
	if opts.VolatileBytes <= 0 {
		opts.VolatileBytes = 8 << 20
	}
	if opts.VolatileEntries <= 0 {
		opts.VolatileEntries = 1 << 16
	}
	l := &Ledger{store: store, opts: opts, claimed: map[Key]chan struct{}{},
		volatile: newVolatileCache(opts.VolatileBytes, opts.VolatileEntries)}
	if a, ok := store.(activeSetter); ok {
		a.setActive(l.active)
	}
	return l, nil
}

// activeSetter is a store that gathers its writes into groups
// (groupCommit): active reports how many writers it may expect soon.
type activeSetter interface {
	setActive(active func() int)
}

// active is how many writers may write soon: the tickets claimed, less
// those whose handler runs (it may run long), and the messages on their
// way to a ticket (Expect).
func (l *Ledger) active() int {
	return int(l.open.Load() + l.coming.Load() - l.inHandler.Load())
}

// Expected is how many writers the ledger expects to write soon, the
// count a durable store's group commit weighs (docs/SPEC-DECISIONS.md
// PERF-1, PERF-5): the tickets out, less those whose handler runs, plus
// the messages announced by Expect that have not yet taken their ticket.
func (l *Ledger) Expected() int { return l.active() }

// Arrival is one message counted by Expect until its Done.
type Arrival struct{ l *Ledger }

// Expect counts one verified message that may soon claim a ticket and
// write, until Done: a message on its way to its ticket is a writer on
// its way (docs/PERFORMANCE.md, "Round 8: groups at 256 callers"). Call
// it only once the message's signature verifies: a flood of bad
// signatures counted while it waits for processing slots held every
// group of two or more honest writers to its window, and their
// throughput to a fifth (docs/SPEC-DECISIONS.md PERF-5). Call Done once
// the message has its ticket, or is answered without one; Done is
// idempotent. The count only tells a group how long waiting may still
// pay: every wait keeps its bounds (the window and the stall).
func (l *Ledger) Expect() Arrival {
	l.coming.Add(1)
	return Arrival{l: l}
}

// Done ends the count of a (Expect); later calls do nothing.
func (a *Arrival) Done() {
	if a.l != nil {
		a.l.coming.Add(-1)
		a.l = nil
	}
}

// PrincipalStore is a Store whose per-caller quota can be charged to
// principals instead of senders (WALStore and MemoryStore are).
type PrincipalStore interface {
	Store
	// SetPrincipal charges each sender's bytes to principal(sender) from
	// now on, what is already recorded included.
	SetPrincipal(principal func(sender string) string)
}

// SetPrincipal groups senders for the quotas: the store's per-caller
// share (when the store is a PrincipalStore) and the volatile cache's
// share are charged to principal(sender), for example the policy rule
// that admitted the sender, so that identities that cost nothing to make
// (did:key) share one quota instead of getting one each. principal must be
// a pure function of the sender; nil restores one quota per sender. Call
// it before the ledger is used.
func (l *Ledger) SetPrincipal(principal func(sender string) string) {
	l.mu.Lock()
	l.principal = principal
	l.mu.Unlock()
	if ps, ok := l.store.(PrincipalStore); ok {
		ps.SetPrincipal(principal)
	}
}

func (l *Ledger) bucket(sender string) string {
	if l.principal == nil {
		return sender
	}
	return l.principal(sender)
}

// Start is what the ledger knows about a message.
type Start struct {
	State State
	// Reply is the recorded reply (Done), the caller's own copy, so that
	// reusing it never changes what a later retry is answered.
	Reply []byte
	// Wait closes when the concurrent copy is finished (Busy).
	Wait <-chan struct{}
	// Ticket is the caller's claim on the key (Fresh, Lost).
	Ticket *Ticket
}

// Start looks up (sender, id). expires is when the message's reply may be
// forgotten. An error means the store failed; nothing was claimed. It is
// StartSent without the message's ts: the entry is held by the wall
// clock's reading of expires alone.
func (l *Ledger) Start(sender string, id [16]byte, expires time.Time) (Start, error) {
	return l.StartSent(sender, id, time.Time{}, expires)
}

// StartSent is Start for a message sent at sent (its verified ts; zero:
// unknown), whose reply may be forgotten at expires. An entry it records
// (Ticket.Running) is kept, whatever the wall clock says, until the
// message's lifetime as its sender counts it, expires less sent, has
// elapsed since the write on a clock that is never stepped (on a store
// that keeps one: the write-ahead log), and no shorter than expires reads
// on the wall clock: a receiver whose clock was ahead when it recorded the
// entry, corrected meanwhile, still finds it when a copy it accepts again
// is retried (docs/SPEC-DECISIONS.md AGENT-29). sent must be the ts the
// receiver checked against its clock and skew: the hold is then at most
// the message's ttl and the skew, what a message sent at the receiver's
// own now is held for; a sent before that only keeps the sender's own
// entries longer, charged to its share.
func (l *Ledger) StartSent(sender string, id [16]byte, sent, expires time.Time) (Start, error) {
	k := Key{Sender: sender, ID: id}
	now := l.opts.Now()
	l.mu.Lock()
	if c, ok := l.claimed[k]; ok {
		l.mu.Unlock()
		return Start{State: Busy, Wait: c}, nil
	}
	if reply, ok := l.volatile.get(k, now); ok {
		l.mu.Unlock()
		return Start{State: Done, Reply: bytes.Clone(reply)}, nil // the caller's own copy
	}
	c := make(chan struct{})
	l.claimed[k] = c
	l.mu.Unlock()
	rec, ok, wait, err := l.lookup(k, expires)
	if err != nil {
		l.release(k, c)
		return Start{}, err
	}
	switch {
	case wait != nil: // held by another process of a SharedStore
		l.release(k, c)
		return Start{State: Busy, Wait: wait}, nil
	case ok && rec.Reply != nil:
		l.release(k, c)
		return Start{State: Done, Reply: bytes.Clone(rec.Reply)}, nil
	case ok:
		l.open.Add(1)
		return Start{State: Lost, Ticket: &Ticket{l: l, k: k, c: c, expires: rec.Expires, running: true}}, nil
	}
	l.open.Add(1)
	t := &Ticket{l: l, k: k, c: c, expires: expires}
	if !sent.IsZero() && expires.After(sent) {
		t.hold = expires.Sub(sent)
	}
	return Start{State: Fresh, Ticket: t}, nil
}

// lookup reads k's record, claiming k first on a SharedStore (wait is
// then set while another process holds it).
func (l *Ledger) lookup(k Key, expires time.Time) (rec Record, ok bool, wait <-chan struct{}, err error) {
	if s, shared := l.store.(SharedStore); shared {
		c, err := s.Claim(k, expires)
		return c.Record, c.Found, c.Wait, err
	}
	rec, ok, err = l.store.Lookup(k)
	return rec, ok, nil, err
}

func (l *Ledger) release(k Key, c chan struct{}) {
	l.mu.Lock()
	delete(l.claimed, k)
	l.mu.Unlock()
	close(c)
}

// Sweep deletes the entries expired at now from the store and the cache.
func (l *Ledger) Sweep(now time.Time) (int, error) {
	l.mu.Lock()
	l.volatile.sweep(now)
	l.mu.Unlock()
	return l.store.Sweep(now, 0)
}

// Usage reports the store's usage.
func (l *Ledger) Usage() Usage { return l.store.Usage() }

// Limits returns the limits of the ledger's store, defaults filled in,
// when the store says them (a ReservingStore); ok is false otherwise.
func (l *Ledger) Limits() (lim Limits, ok bool) {
	if rs, ok := l.store.(ReservingStore); ok {
		return rs.Limits(), true
	}
	return Limits{}, false
}

// Shared reports whether the store is a SharedStore: Start then waits for
// the network (a claim), and callers wait for it as for a disk.
func (l *Ledger) Shared() bool {
	_, ok := l.store.(SharedStore)
	return ok
}

// Store returns the ledger's store.
func (l *Ledger) Store() Store { return l.store }

// Close closes the store.
func (l *Ledger) Close() error { return l.store.Close() }

// Ticket is the claim of one caller on one key: exactly one of Finish or
// Abandon ends it.
type Ticket struct {
	l         *Ledger
	k         Key
	c         chan struct{}
	expires   time.Time
	reserve   int64         // the reply's reservation (0: the store's default)
	hold      time.Duration // the message's lifetime from its ts (StartSent; 0: none)
	running   bool
	inHandler bool // counted in Ledger.inHandler
	ended     bool
}

func (t *Ticket) leaveHandler() {
	if t.inHandler {
		t.inHandler = false
		t.l.inHandler.Add(-1)
	}
}

// Handling tells the ledger whether the ticket's handler runs now. A
// successful Running counts the ticket as in its handler until Finish: a
// handler may run long, and a group commit does not wait for it. A caller
// that first computes (waits for a processor, decodes, validates) says
// Handling(false) after Running, Handling(true) as the handler starts and
// Handling(false) as it returns: while it computes, the ticket is a writer
// expected soon (its reply), as before Running. It does nothing on a
// ticket that is not running or has ended.
func (t *Ticket) Handling(on bool) {
	switch {
	case !on:
		t.leaveHandler()
	case t.running && !t.ended && !t.inHandler:
		t.inHandler = true
		t.l.inHandler.Add(1)
	}
}

// Extend moves the ticket's expiry to expires when that is later (never
// earlier), before Running: an entry must outlive the handler's longest
// run, or it could be reclaimed while the handler runs.
func (t *Ticket) Extend(expires time.Time) {
	if !t.running && expires.After(t.expires) {
		t.expires = expires
	}
}

// Reserve sets the room Running reserves for the reply: reserve bytes, the
// largest reply Finish then records (on a ReservingStore; another store
// reserves its default). Call it before Running; without it the store's
// Limits.ReplyReserve is reserved.
func (t *Ticket) Reserve(reserve int64) {
	if !t.running {
		t.reserve = reserve
	}
}

// markRunning marks the ticket's key running in the store, reserving the
// ticket's reservation, held at least hold from the write (on a
// holdingStore; 0: no hold).
func (t *Ticket) markRunning(expires time.Time, hold time.Duration) error {
	if hs, ok := t.l.store.(holdingStore); ok && hold > 0 {
		return hs.markRunningHeld(t.k, expires, t.reserve, hold)
	}
	if rs, ok := t.l.store.(ReservingStore); ok && t.reserve > 0 {
		return rs.MarkRunningWithin(t.k, expires, t.reserve)
	}
	return t.l.store.MarkRunning(t.k, expires)
}

// Running records durably that the handler is about to run, and reserves
// the room of its reply (Store.MarkRunning; see Reserve). After it succeeds, the ticket
// must end with Finish (else the key stays running and a later Start
// reports Lost). ErrFull, ErrCallerFull and ErrNoSpace (NoRoom) are
// retryable refusals: nothing was written; end the ticket with Abandon.
func (t *Ticket) Running() error {
	if t.ended {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger ticket already ended")
	}
	if t.running {
		return nil
	}
	if err := t.markRunning(t.expires, t.hold); err != nil {
		return err
	}
	t.running, t.inHandler = true, true
	t.l.inHandler.Add(1)
	return nil
}

// Finish records reply and ends the ticket. After Running (and for a Lost
// ticket) it is durable before Finish returns; otherwise the reply goes to
// the bounded in-memory cache only. On a store error the ticket stays
// open: the caller may Finish again with another (smaller) reply.
func (t *Ticket) Finish(reply []byte) error {
	if t.ended {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger ticket already ended")
	}
	reply = append([]byte{}, reply...) // non-nil: nil means running
	t.leaveHandler()
	if t.running {
		err := t.l.store.Finish(t.k, reply)
		if amp.NameOf(err) == ErrTicketUsed {
			// The running entry went missing (reclaimed, on a clock that
			// jumped past its expiry): the reply is not dropped but
			// recorded again, within the quotas, kept at least a minute
			// so that a retry already in flight finds it.
			exp := t.expires
			if now := t.l.opts.Now(); exp.Before(now.Add(time.Minute)) {
				exp = now.Add(time.Minute)
			}
			// No hold: the first record's has elapsed (the entry was
			// reclaimed), and its minute is on the wall clock.
			if err = t.markRunning(exp, 0); err == nil {
				err = t.l.store.Finish(t.k, reply)
			}
		}
		if err != nil {
			return err
		}
	} else {
		t.l.mu.Lock()
		t.l.volatile.put(t.k, t.l.bucket(t.k.Sender), reply, t.expires, t.l.opts.Now())
		t.l.mu.Unlock()
	}
	t.end()
	return nil
}

// Abandon ends the ticket without recording anything: for a retryable
// refusal, which the sender retries with the same id (RFC 001 §16.3). On
// a running ticket it leaves the key running: a later Start reports Lost;
// the store keeps charging the running entry to its quotas until it
// expires, but gives back the disk it reserved for the reply.
func (t *Ticket) Abandon() {
	if t.ended {
		return
	}
	if r, ok := t.l.store.(reservationReleaser); ok && t.running {
		r.releaseReservation(t.k)
	}
	t.end()
}

// holdingStore is a store that keeps a running entry, whatever the wall
// clock says, until a given time has elapsed since its write on a clock
// that is never stepped (WALStore): markRunningHeld is
// ReservingStore.MarkRunningWithin with that hold (StartSent).
type holdingStore interface {
	markRunningHeld(k Key, expires time.Time, reserve int64, hold time.Duration) error
}

// reservationReleaser is a store that reserves disk for a running
// entry's reply (WALStore): releaseReservation gives it back when the
// ticket ends without a reply.
type reservationReleaser interface {
	releaseReservation(k Key)
}

// Durable reports whether Running succeeded (or the ticket is Lost's).
func (t *Ticket) Durable() bool { return t.running }

func (t *Ticket) end() {
	t.ended = true
	t.leaveHandler()
	if s, ok := t.l.store.(SharedStore); ok {
		s.Unclaim(t.k)
	}
	t.l.open.Add(-1)
	t.l.release(t.k, t.c)
}

// volatileCache is a bounded FIFO of replies that were not written
// durably, with a share per principal: a principal's entries beyond its
// share (1/8 of the bytes and entries) evict its own oldest, so that one
// sender (or all the senders of one principal) cannot flush the replies
// kept for others. Callers hold the Ledger's lock.
type volatileCache struct {
	maxBytes     int64
	maxEntries   int
	shareBytes   int64
	shareEntries int
	bytes        int64
	m            map[Key]volatileEntry
	order        []Key // insertion order; may hold keys already removed
	buckets      map[string]*volatileBucket
}

type volatileBucket struct {
	bytes   int64
	entries int
	order   []Key // insertion order; may hold keys already removed
}

type volatileEntry struct {
	reply     []byte
	expires   time.Time
	principal string
}

func newVolatileCache(maxBytes int64, maxEntries int) volatileCache {
	return volatileCache{maxBytes: maxBytes, maxEntries: maxEntries, shareBytes: max(maxBytes/8, 1),
		shareEntries: max(maxEntries/8, 1), m: map[Key]volatileEntry{}, buckets: map[string]*volatileBucket{}}
}

func volatileSize(k Key, reply []byte) int64 { return int64(len(k.Sender) + 16 + len(reply) + 64) }

func (c *volatileCache) get(k Key, now time.Time) ([]byte, bool) {
	e, ok := c.m[k]
	if !ok {
		return nil, false
	}
	if now.After(e.expires) {
		c.remove(k)
		return nil, false
	}
	return e.reply, true
}

func (c *volatileCache) remove(k Key) {
	e, ok := c.m[k]
	if !ok {
		return
	}
	size := volatileSize(k, e.reply)
	c.bytes -= size
	delete(c.m, k)
	if b := c.buckets[e.principal]; b != nil {
		b.bytes -= size
		if b.entries--; b.entries <= 0 {
			delete(c.buckets, e.principal)
		}
	}
}

// compact drops removed keys from order once it is much longer than live.
func (c *volatileCache) compact(order []Key, live int) []Key {
	if len(order) <= 2*live+16 {
		return order
	}
	kept := make([]Key, 0, live)
	for _, o := range order {
		if _, ok := c.m[o]; ok {
			kept = append(kept, o)
		}
	}
	return kept
}

func (c *volatileCache) put(k Key, principal string, reply []byte, expires, now time.Time) {
	size := volatileSize(k, reply)
	if size > c.shareBytes || size > c.maxBytes/4 || !now.Before(expires) {
		return // too large to keep, or already expired: a replay is evaluated again
	}
	c.remove(k)
	// The principal's own oldest make room within its share first.
	if b := c.buckets[principal]; b != nil {
		for len(b.order) > 0 && (b.bytes+size > c.shareBytes || b.entries+1 > c.shareEntries) {
			if e, ok := c.m[b.order[0]]; ok && e.principal == principal {
				c.remove(b.order[0])
			}
			b.order = b.order[1:]
		}
	}
	for len(c.order) > 0 && (c.bytes+size > c.maxBytes || len(c.m)+1 > c.maxEntries) {
		c.remove(c.order[0])
		c.order = c.order[1:]
	}
	b := c.buckets[principal] // possibly emptied (and deleted) above
	if b == nil {
		b = &volatileBucket{}
		c.buckets[principal] = b
	}
	c.m[k] = volatileEntry{reply: reply, expires: expires, principal: principal}
	c.order = append(c.compact(c.order, len(c.m)), k)
	b.order = append(c.compact(b.order, b.entries), k)
	b.entries++
	b.bytes += size
	c.bytes += size
}

func (c *volatileCache) sweep(now time.Time) {
	for k, e := range c.m {
		if now.After(e.expires) {
			c.remove(k)
		}
	}
}
