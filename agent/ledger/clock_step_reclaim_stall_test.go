package ledger

import (
	"path/filepath"
	"testing"
	"time"
)

// TestClockStepForwardLongEntryStallsNoReclaim: since AGENT-18 an entry the
// wall clock calls expired, but whose lifetime has not elapsed on the
// monotonic clock, stopped the reclaiming: entries are taken in order of
// wall expiry, and the first one not yet due ended the pass. Attack (a
// caller with the longest ttl the agent accepts, and a wall clock stepped
// forward by NTP or a VM resumed with a stale offset): the caller's entry,
// written before the step, heads the expiry order for up to its whole
// lifetime (7 days), and meanwhile no entry of anyone is reclaimed though
// their time has passed on both clocks; the budget fills and every
// invocation is refused until the caller's entry is due. What should
// happen (docs/SPEC-DECISIONS.md AGENT-18): an entry not yet due on the
// monotonic clock waits aside, and entries due on both clocks behind it
// are reclaimed on time.
func TestClockStepForwardLongEntryStallsNoReclaim(t *testing.T) {
	c, mono := newClock(), newClock()
	s := openTestWAL(t, filepath.Join(t.TempDir(), "l.wal"), c, WALOptions{
		Elapsed: func() time.Duration { return mono.Now().Sub(t0) }})
	defer s.Close()
	long := Key{Sender: "did:key:zLongTTL", ID: id(1)}
	if err := s.MarkRunning(long, c.Now().Add(24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	c.Add(48 * time.Hour) // the wall clock steps forward two days
	const short = 16
	for i := 0; i < short; i++ {
		if err := s.MarkRunning(Key{Sender: "did:key:zOther", ID: id(100 + i)}, c.Now().Add(10*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	c.Add(20 * time.Minute)
	mono.Add(20 * time.Minute)
	n, err := s.Sweep(c.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if n != short {
		t.Fatalf("a sweep 20 minutes after %d entries of 10 minutes reclaimed %d: an entry not yet due on the monotonic clock held them", short, n)
	}
	if _, ok, _ := s.Lookup(long); !ok {
		t.Fatal("the long entry was reclaimed before its lifetime elapsed")
	}
	mono.Add(24 * time.Hour)
	c.Add(24 * time.Hour)
	if n, err := s.Sweep(c.Now(), 0); err != nil || n != 1 {
		t.Fatalf("once its lifetime elapsed a sweep reclaimed %d (%v), want 1", n, err)
	}
}
