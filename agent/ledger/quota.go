package ledger

import (
	"sync"

	"github.com/ampbundle/ampbundle/amp"
)

// Limits bound a Store.
type Limits struct {
	// Budget caps the accounted bytes of the store (default 256 MiB).
	Budget int64
	// PerCaller caps the accounted bytes of one sender, or of one
	// principal when the Ledger's SetPrincipal groups senders (default
	// Budget/8).
	PerCaller int64
	// ReplyReserve is the largest reply the store records for an entry
	// marked running without a reservation of its own (MarkRunning; an
	// entry marked with ReservingStore.MarkRunningWithin, or by a Ticket
	// given Reserve, has the one it was given). It is reserved in full
	// when the entry is marked running (its sender's share and the budget,
	// and on the write-ahead log the bytes on disk) and given back down to
	// the reply's own size when it is recorded: a reply within it is
	// always recorded, a larger one is refused (ErrReplyTooLarge), so that
	// no handler runs whose result could not be kept. Default: 256 KiB, or
	// PerCaller/8 when that is less (a share always holds eight running
	// entries); at least MinReplyReserve, so that a small error result
	// always fits.
	ReplyReserve int64
}

// MinReplyReserve is the smallest reservation of a reply (1 KiB): a small
// error result, the answer to a reply over its reservation, always fits.
// It is also the reservation of an entry the write-ahead log finds left
// running when it is opened: its one reply is the Lost ticket's
// outcome_unknown answer (docs/SPEC-DECISIONS.md AGENT-24).
const MinReplyReserve = 1 << 10

// Resolved returns l with its defaults filled in: the limits a store
// opened with l applies.
func (l Limits) Resolved() Limits { return l.withDefaults() }

// MaxReserve is the largest reservation one entry may have under l: what
// fits in one caller's share beside the entry's own bytes (for a sender of
// up to 64 bytes, as a did:key; a longer one needs a little more room). A
// larger one could never be had: every Running would be refused,
// retryably, for ever.
func (l Limits) MaxReserve() int64 {
	l = l.withDefaults()
	return min(l.PerCaller-entryCost(Key{}, 0)-2*maxReserveSender, maxReply)
}

// maxReserveSender is the sender length MaxReserve leaves room for (a
// did:key is 56 bytes), and maxReply the largest reply a store records
// (the write-ahead log's record holds a 31-bit length).
const (
	maxReserveSender = 64
	maxReply         = 1<<31 - 1
)

// Default limits.
const (
	DefaultBudget       = 256 << 20
	DefaultReplyReserve = 256 << 10
	// entryOverhead is counted per entry besides its key (twice: entry and
	// expiry index) and its reply: record header, index row, page slots.
	entryOverhead = 96
)

func (l Limits) withDefaults() Limits {
	if l.Budget <= 0 {
		l.Budget = DefaultBudget
	}
	if l.PerCaller <= 0 || l.PerCaller > l.Budget {
		l.PerCaller = l.Budget / 8
	}
	if l.ReplyReserve <= 0 {
		l.ReplyReserve = min(DefaultReplyReserve, l.PerCaller/8)
	}
	if l.ReplyReserve < MinReplyReserve {
		l.ReplyReserve = MinReplyReserve
	}
	return l
}

// reserveOf is the reservation of an entry marked running with reserve
// (MarkRunningWithin): the default for reserve <= 0, at least
// MinReplyReserve, at most maxReply.
func (l Limits) reserveOf(reserve int64) int64 {
	if reserve <= 0 {
		return l.ReplyReserve
	}
	return min(max(reserve, MinReplyReserve), maxReply)
}

// entryCost is what an entry of key k with a reply of n bytes counts.
func entryCost(k Key, n int64) int64 {
	return 2*int64(len(k.Sender)+17) + n + entryOverhead
}

// accounts tracks the bytes of a Store, in total, per sender and per
// principal (the quota bucket a sender is charged to, see
// Ledger.SetPrincipal; by default each sender is its own).
type accounts struct {
	lim       Limits
	mu        sync.Mutex
	total     int64
	entries   int
	per       map[string]int64 // per sender
	byBucket  map[string]int64 // per principal
	principal func(sender string) string
}

func newAccounts(lim Limits) *accounts {
	return &accounts{lim: lim.withDefaults(), per: map[string]int64{}, byBucket: map[string]int64{}}
}

func (a *accounts) bucket(sender string) string {
	if a.principal == nil {
		return sender
	}
	return a.principal(sender)
}

// setPrincipal charges each sender's bytes to principal(sender) from now
// on, re-bucketing what is already accounted. nil: each sender alone.
func (a *accounts) setPrincipal(principal func(sender string) string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.principal = principal
	a.byBucket = make(map[string]int64, len(a.per))
	for s, n := range a.per {
		a.byBucket[a.bucket(s)] += n
	}
}

// reserve charges n bytes to sender, or refuses without charging.
func (a *accounts) reserve(sender string, n int64, newEntry bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.total+n > a.lim.Budget {
		return amp.Named(amp.CodeOverloaded, ErrFull, "the agent's idempotency ledger is full; retry later")
	}
	if a.byBucket[a.bucket(sender)]+n > a.lim.PerCaller {
		return amp.Named(amp.CodeRateLimited, ErrCallerFull, "this caller's share of the agent's idempotency ledger is used up (callers the policy does not name share one); retry later")
	}
	a.charge(sender, n, newEntry)
	return nil
}

// charge adds n (which may be negative) without checking. A balance is
// kept exact, never clamped (a clamp would keep a charge, or a credit, for
// good: AGENT-23), and removed at zero. No store takes a balance below
// zero: a charge is made before the entry it pays for is held, and what
// is given back (a release, a reply's refund) only once the index no
// longer holds it (the write-ahead log refunds a reply when its record is
// applied to the entry it replaces, not before: AGENT-23).
func (a *accounts) charge(sender string, n int64, newEntry bool) {
	a.total += n
	if newEntry {
		a.entries++
	}
	if v := a.per[sender] + n; v != 0 {
		a.per[sender] = v
	} else {
		delete(a.per, sender)
	}
	b := a.bucket(sender)
	if v := a.byBucket[b] + n; v != 0 {
		a.byBucket[b] = v
	} else {
		delete(a.byBucket, b)
	}
}

func (a *accounts) lock()   { a.mu.Lock() }
func (a *accounts) unlock() { a.mu.Unlock() }

// release removes an entry of n bytes.
func (a *accounts) release(sender string, n int64) {
	a.mu.Lock()
	a.charge(sender, -n, false)
	a.entries--
	a.mu.Unlock()
}

// settle gives back the difference between a reply and its reservation
// of reserve bytes (delta = the reply's cost - the reservation's). A reply
// larger than its reservation is refused (ErrReplyTooLarge) and nothing is
// charged: the room it would need was never secured, on disk as in the
// quotas.
func (a *accounts) settle(sender string, delta, reserve int64) error {
	if err := overReserve(delta, reserve); err != nil {
		return err
	}
	a.mu.Lock()
	a.charge(sender, delta, false)
	a.mu.Unlock()
	return nil
}

// overReserve refuses a reply whose cost exceeds that of its reservation
// of reserve bytes by delta > 0 (ErrReplyTooLarge); it charges nothing.
func overReserve(delta, reserve int64) error {
	if delta > 0 {
		return amp.Named(amp.CodeOverloaded, ErrReplyTooLarge,
			"the reply is larger than the idempotency ledger reserved for it (%d bytes)", reserve)
	}
	return nil
}

func (a *accounts) usage() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Usage{Entries: a.entries, Bytes: a.total, Budget: a.lim.Budget}
}
