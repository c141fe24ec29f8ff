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
	// ReplyReserve is reserved for an entry's reply when it is marked
	// running (default 4 KiB, at least 1 KiB): a reply within it is always
	// recorded, so a small error result always fits.
	ReplyReserve int64
}

// Default limits.
const (
	DefaultBudget       = 256 << 20
	DefaultReplyReserve = 4 << 10
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
		l.ReplyReserve = DefaultReplyReserve
	}
	if l.ReplyReserve < 1<<10 {
		l.ReplyReserve = 1 << 10
	}
	return l
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

// charge adds n (which may be negative) without checking.
func (a *accounts) charge(sender string, n int64, newEntry bool) {
	a.total += n
	if newEntry {
		a.entries++
	}
	if v := a.per[sender] + n; v > 0 {
		a.per[sender] = v
	} else {
		delete(a.per, sender)
	}
	b := a.bucket(sender)
	if v := a.byBucket[b] + n; v > 0 {
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

// grow charges the difference between a reply and its reservation: always
// when it is not larger, within the limits otherwise.
func (a *accounts) grow(sender string, delta int64) error {
	if delta <= 0 {
		a.mu.Lock()
		a.charge(sender, delta, false)
		a.mu.Unlock()
		return nil
	}
	return a.reserve(sender, delta, false)
}

func (a *accounts) usage() Usage {
	a.mu.Lock()
	defer a.mu.Unlock()
	return Usage{Entries: a.entries, Bytes: a.total, Budget: a.lim.Budget}
}
