package ledger

import (
	"path/filepath"
	"testing"
	"time"
)

// TestClockStepForwardAndBackNeverRunsTwice: the ledger judged expiry by
// the wall clock alone. Attack (no caller needed, an NTP step or a VM
// resumed with a stale offset; a caller who can provoke one helps): the
// wall clock jumps forward an hour, a sweep (or any commit) reclaims every
// entry "expired" at that time, and the clock is stepped back. Before the
// fix the entries were gone: a retry of a message whose handler ran 10 s
// ago (its ts + ttl + skew still ahead on the corrected clock, so the
// receiver accepts it) got Fresh and the handler ran a second time. What
// should happen (docs/SPEC-DECISIONS.md AGENT-18): an entry is reclaimed
// only once its expiry has passed on the wall clock and its lifetime has
// elapsed on a clock that is never stepped (WALOptions.Elapsed; time.Now's
// monotonic readings by default), so the retry gets Done with the
// recorded reply; and once that lifetime has elapsed it is reclaimed
// (the step does not keep it for ever).
func TestClockStepForwardAndBackNeverRunsTwice(t *testing.T) {
	c, mono := newClock(), newClock() // the wall clock, and one never stepped
	s := openTestWAL(t, filepath.Join(t.TempDir(), "l.wal"), c, WALOptions{
		Elapsed: func() time.Duration { return mono.Now().Sub(t0) }})
	defer s.Close()
	l, err := New(s, Options{Now: c.Now})
	if err != nil {
		t.Fatal(err)
	}
	tick := func(wall, elapsed time.Duration) { c.Add(wall); mono.Add(elapsed) }
	sender, mid := "did:key:zVictim", id(1)
	st, err := l.Start(sender, mid, c.Now().Add(2*time.Minute))
	if err != nil || st.State != Fresh {
		t.Fatalf("%v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if err := st.Ticket.Finish([]byte("ran once")); err != nil {
		t.Fatal(err)
	}
	tick(time.Hour, 5*time.Second) // the step forward
	if n, err := l.Sweep(c.Now()); err != nil || n != 0 {
		t.Fatalf("a sweep after the step reclaimed %d entries (%v), want 0", n, err)
	}
	tick(-time.Hour, 5*time.Second) // stepped back: 10 s after the run
	st, err = l.Start(sender, mid, c.Now().Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != Done || string(st.Reply) != "ran once" {
		if st.Ticket != nil {
			st.Ticket.Abandon()
		}
		t.Fatalf("a retry 10 s after the run, once the clock stepped back, got %s: the handler would run a second time", st.State)
	}
	tick(3*time.Minute, 3*time.Minute) // its lifetime has elapsed
	if n, err := l.Sweep(c.Now()); err != nil || n != 1 {
		t.Fatalf("a sweep after the entry's lifetime reclaimed %d entries (%v), want 1", n, err)
	}
}
