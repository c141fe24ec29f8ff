package ledger

import (
	"sync"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// MemoryStore is a Store in memory: the same quotas and states as the
// write-ahead log, not durable (a restart forgets it). For tests, benchmarks
// and agents whose handlers have no side effects.
type MemoryStore struct {
	acct *accounts
	mu   sync.Mutex
	m    map[Key]Record
	rsv  map[Key]int64 // running entries: their reply's reservation
}

// NewMemory returns an empty MemoryStore.
func NewMemory(lim Limits) *MemoryStore {
	return &MemoryStore{acct: newAccounts(lim), m: map[Key]Record{}, rsv: map[Key]int64{}}
}

// Lookup implements Store.
func (s *MemoryStore) Lookup(k Key) (Record, bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[k]
	return r, ok, nil
}

// MarkRunning implements Store.
func (s *MemoryStore) MarkRunning(k Key, expires time.Time) error {
	return s.MarkRunningWithin(k, expires, 0)
}

// MarkRunningWithin implements ReservingStore.
func (s *MemoryStore) MarkRunningWithin(k Key, expires time.Time, reserve int64) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.m[k]; ok {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger entry already exists")
	}
	reserve = s.acct.lim.reserveOf(reserve)
	if err := s.acct.reserve(k.Sender, entryCost(k, reserve), true); err != nil {
		return err
	}
	s.m[k] = Record{Expires: expires}
	s.rsv[k] = reserve
	return nil
}

// Limits implements ReservingStore.
func (s *MemoryStore) Limits() Limits { return s.acct.lim }

// Finish implements Store.
func (s *MemoryStore) Finish(k Key, reply []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.m[k]
	if !ok {
		return amp.Named(amp.CodeInternalError, ErrTicketUsed, "ledger entry is not running")
	}
	reserve := s.reserveOf(k)
	if err := s.acct.settle(k.Sender, int64(len(reply))-reserve, reserve); err != nil {
		return err
	}
	r.Reply = reply
	s.m[k] = r
	delete(s.rsv, k)
	return nil
}

// Sweep implements Store.
func (s *MemoryStore) Sweep(now time.Time, max int) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, r := range s.m {
		if max > 0 && n >= max {
			break
		}
		if now.After(r.Expires) {
			s.acct.release(k.Sender, recordCost(k, r, s.reserveOf(k)))
			delete(s.m, k)
			delete(s.rsv, k)
			n++
		}
	}
	return n, nil
}

// reserveOf is the reservation of k's reply, k running. Callers hold s.mu.
func (s *MemoryStore) reserveOf(k Key) int64 {
	if r, ok := s.rsv[k]; ok {
		return r
	}
	return s.acct.lim.ReplyReserve
}

// recordCost is what a stored record counts; reserve is its reply's
// reservation while it runs.
func recordCost(k Key, r Record, reserve int64) int64 {
	if r.Reply == nil {
		return entryCost(k, reserve)
	}
	return entryCost(k, int64(len(r.Reply)))
}

// Usage implements Store.
func (s *MemoryStore) Usage() Usage { return s.acct.usage() }

// SetPrincipal implements PrincipalStore.
func (s *MemoryStore) SetPrincipal(principal func(sender string) string) {
	s.acct.setPrincipal(principal)
}

// Close implements Store.
func (s *MemoryStore) Close() error { return nil }
