package ledger

import (
	"path/filepath"
	"testing"
	"time"
)

// TestSetAsideEntryAtItsExpiryNeverSpins: an entry set aside at
// open (AGENT-22) whose time left has elapsed on the clock that is never
// stepped, but whose expiry has not passed on the wall clock (stepped back
// meanwhile: a clock ahead at boot and corrected, or an NTP step after a
// quick restart), is put back in the set-aside heap with a new lifetime.
// Attack (no peer needed: a busy agent commits every millisecond, and wall
// and monotonic clocks advance together, so the commit that takes the
// entry again lands on its expiry's millisecond): with the wall clock
// exactly at the expiry, the new lifetime, afterOf(el, expiry, now), was el
// itself, the entry was due again at once, and reclaim popped and pushed
// it for ever holding the index lock: every commit and lookup of the store
// hung (the agent stopped answering, and its shutdown waited for ever).
// What should happen (docs/SPEC-DECISIONS.md AGENT-22): the entry is put
// back due once its expiry has passed, and the sweep returns.
func TestSetAsideEntryAtItsExpiryNeverSpins(t *testing.T) {
	c := newRestartClock()
	s, k, expires := setAsideOne(t, c)
	// Its two minutes have elapsed on the monotonic clock, and the wall
	// clock, corrected, reads its expiry to the millisecond.
	c.mono.Add(2 * time.Minute)
	c.wall.Add(expires.Sub(c.wall.Now()))
	done := make(chan error, 1)
	go func() {
		_, err := s.Sweep(c.wall.Now(), 0)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second): // a sweep of one entry takes microseconds
		t.Fatal("a sweep with the wall clock at a set-aside entry's expiry did not return: reclaim spins holding the index lock")
	}
	if _, ok, err := s.Lookup(k); err != nil || !ok {
		t.Fatalf("the entry, not expired on the wall clock, was reclaimed (%v %v)", ok, err)
	}
	c.tick(time.Millisecond, time.Millisecond)
	if n, err := s.Sweep(c.wall.Now(), 0); err != nil || n != 1 {
		t.Fatalf("once its expiry passed a sweep reclaimed %d (%v), want 1", n, err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
}

// setAsideOne writes one done entry of two minutes and reopens the log
// with the wall clock an hour ahead: the open sets it aside (AGENT-22). It
// returns the store, the entry's key and its expiry.
func setAsideOne(t *testing.T, c restartClock) (*WALStore, Key, time.Time) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "l.wal")
	k := Key{Sender: "did:key:zVictim", ID: id(1)}
	expires := c.wall.Now().Add(runLifetime)
	c.recordRun(t, path, func() *WALStore { return c.openNoSync(t, path, Limits{}) }, k, []byte("ran once"))
	c.tick(time.Hour, time.Second) // the restart, with the clock an hour ahead
	s := c.openNoSync(t, path, Limits{})
	if u := s.Usage(); u.Entries != 1 {
		t.Fatalf("usage after the restart %+v, want the entry set aside", u)
	}
	return s, k, expires
}
