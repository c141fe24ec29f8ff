package ledger

import (
	"testing"
	"time"
)

// TestSetAsideEntryRetimedByClockStepBackNeverStaysForEver: an entry set
// aside at open (AGENT-22) whose time left has elapsed on the clock that is
// never stepped, while the wall clock reads before its expiry, is given a
// new lifetime from the wall clock: its expiry less the wall time. Attack
// (no peer needed: an RTC reset to an old date for one reading, a VM
// resumed with a stale clock, a sweep run with a wrong time): one commit
// while the wall clock is stepped far back (a year) re-times every such
// entry by that step. Before the fix, once the clock was right again, the
// entries were never reclaimed by time: they stayed, counted in Usage and
// the metrics, for a year (longer than any lifetime), leaving only when the
// budget needed their room. What should happen (docs/SPEC-DECISIONS.md
// AGENT-22): the new lifetime counts from a wall time no earlier than the
// reference the open set the entry aside by (the log's last write), so a
// step back re-times it by no more than the time it had left after that
// write; it is still kept while the wall clock reads before its expiry.
func TestSetAsideEntryRetimedByClockStepBackNeverStaysForEver(t *testing.T) {
	c := newRestartClock()
	s, _, _ := setAsideOne(t, c)
	defer s.Close()
	const year = 365 * 24 * time.Hour
	c.tick(-year, 3*time.Minute) // its time has elapsed; the wall clock reads a year back
	if n, err := s.Sweep(c.wall.Now(), 0); err != nil || n != 0 {
		t.Fatalf("a sweep with the wall clock before the entry's expiry reclaimed %d (%v), want 0", n, err)
	}
	c.tick(year, 3*time.Minute) // the clock is right again; its two minutes have elapsed once more
	if n, err := s.Sweep(c.wall.Now(), 0); err != nil || n != 1 {
		t.Fatalf("a sweep with the clock right again, the entry expired and its time elapsed twice, reclaimed %d (%v), want 1: usage %+v", n, err, s.Usage())
	}
	if u := s.Usage(); u.Entries != 0 || u.Bytes != 0 {
		t.Fatalf("usage after the reclaim: %+v, want none", u)
	}
}
