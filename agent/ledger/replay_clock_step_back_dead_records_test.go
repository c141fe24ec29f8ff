package ledger

import (
	"math"
	"path/filepath"
	"testing"
	"time"
)

// TestReplayCapAdmitsDeadRecordsAfterClockStepBack: since AGENT-20
// the open counts every record not expired on the wall clock at open
// against Budget/132, but the file also holds dead records of entries the
// writer reclaimed (up to the slack, max(Budget/8, 1 MiB), before it
// compacts). Attack (no caller needed; an NTP step or a VM restored with a
// stale clock, helped by any caller who fills the ledger): the agent fills
// its budget, reclaims it once it expired, fills it again, and is killed;
// it restarts with its wall clock stepped back before the first entries'
// expiry. Before the fix the reclaimed entries read as live again, the index passes
// the cap, and the open fails with ledger_corrupt: the agent does not
// start, and the operator is told to move the file aside (losing every
// record). What should happen: an honest log under the same limits opens;
// the cap counts the dead records the slack allows (AGENT-21).
func TestReplayCapAdmitsDeadRecordsAfterClockStepBack(t *testing.T) {
	lim := Limits{Budget: 64 << 10, PerCaller: 64 << 10}
	path := filepath.Join(t.TempDir(), "l.wal")
	c, mono := newClock(), newClock()
	s := openTestWAL(t, path, c, WALOptions{Limits: lim,
		Elapsed: func() time.Duration { return mono.Now().Sub(t0) }})
	fill := func(from int) int {
		n := 0
		for i := from; ; i++ {
			k := Key{Sender: "did:key:zA", ID: id(i)}
			if err := s.MarkRunningWithin(k, c.Now().Add(time.Minute), MinReplyReserve); err != nil {
				return n
			}
			if err := s.Finish(k, nil); err != nil {
				t.Fatal(err)
			}
			n++
		}
	}
	first := fill(0)
	c.Add(2 * time.Minute)
	mono.Add(2 * time.Minute)
	if _, err := s.Sweep(c.Now(), 0); err != nil {
		t.Fatal(err)
	}
	second := fill(100000)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.Add(-2 * time.Minute) // the restart's clock, stepped back
	s2, err := OpenWAL(path, WALOptions{Limits: lim, Now: c.Now})
	if err != nil {
		t.Fatalf("an honest log (%d entries reclaimed, %d live) under the same limits does not open after a clock step back: %v", first, second, err)
	}
	s2.Close()
}

// TestReplayCapWithLargestSlackOpens: the bound adds the slack's dead
// records to the budget's entries; with the largest Slack an operator may
// give, a sum that wrapped negative would refuse every log that holds an
// entry (AGENT-21 computes slack/32 + 2, which cannot overflow).
func TestReplayCapWithLargestSlackOpens(t *testing.T) {
	path := filepath.Join(t.TempDir(), "l.wal")
	c := newClock()
	opts := WALOptions{Slack: math.MaxInt64, Limits: Limits{Budget: math.MaxInt64 / 2}}
	s := openTestWAL(t, path, c, opts)
	if err := s.MarkRunning(Key{Sender: "did:key:zA", ID: id(1)}, c.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s = openTestWAL(t, path, c, opts)
	s.Close()
}
