package ledger

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// restartClock is a wall clock and a clock that is never stepped, and
// what the file system records of the log: the wall time of its last
// write (the kernel stamps a file's mtime from the same wall clock the
// agent reads; the tests' wall clock is injected, so the stamp is set
// from it).
type restartClock struct {
	wall, mono *clock
}

func newRestartClock() restartClock { return restartClock{newClock(), newClock()} }

func (c restartClock) opts(lim Limits) WALOptions {
	return WALOptions{Limits: lim, Elapsed: func() time.Duration { return c.mono.Now().Sub(t0) }}
}

func (c restartClock) tick(wall, elapsed time.Duration) { c.wall.Add(wall); c.mono.Add(elapsed) }

// openNoSync opens the log at path without fdatasync (the tests that
// use it are about the index, and make many groups).
func (c restartClock) openNoSync(t *testing.T, path string, lim Limits) *WALStore {
	t.Helper()
	o := c.opts(lim)
	o.Now = c.wall.Now
	s, err := openWAL(path, o, func(*os.File) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// stamp sets the log's mtime to the wall clock now: what a write by the
// agent at this time leaves.
func (c restartClock) stamp(t *testing.T, path string) {
	t.Helper()
	if err := os.Chtimes(path, c.wall.Now(), c.wall.Now()); err != nil {
		t.Fatal(err)
	}
}

// TestRestartWithClockAheadNeverRunsTwice: AGENT-18 protects a running
// log from a wall clock stepped forward and back, but a log opened while
// the wall clock was ahead dropped every entry that clock called expired.
// Attack (no caller needed: NTP stepped wrongly at boot, a VM restored
// with a stale offset, an RTC off by hours): the handler runs, the agent
// restarts with its clock an hour ahead, the clock is corrected, and the
// sender retries (its ts + ttl + skew is ahead again, so the receiver
// accepts the copy). Before the fix the open had dropped the entry: the
// retry got Fresh and the handler ran a second time. What should happen
// (docs/SPEC-DECISIONS.md AGENT-22): the open sets the entry aside with
// the time it had left after the log's last write (its mtime), so the
// retry gets Done with the recorded reply; and once that time has elapsed
// on the clock that is never stepped, it is reclaimed.
func TestRestartWithClockAheadNeverRunsTwice(t *testing.T) {
	c := newRestartClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c.wall, c.opts(Limits{}))
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	sender, mid := "did:key:zVictim", id(1)
	st, err := l.Start(sender, mid, c.wall.Now().Add(2*time.Minute))
	if err != nil || st.State != Fresh {
		t.Fatalf("%v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if err := st.Ticket.Finish([]byte("ran once")); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	c.stamp(t, path)

	c.tick(time.Hour, 5*time.Second) // the restart, with the clock an hour ahead
	s = openTestWAL(t, path, c.wall, c.opts(Limits{}))
	defer s.Close()
	l, err = New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := l.Sweep(c.wall.Now()); err != nil || n != 0 {
		t.Fatalf("a sweep with the clock ahead reclaimed %d entries (%v), want 0", n, err)
	}
	c.tick(-time.Hour, 5*time.Second) // corrected: 10 s after the run
	st, err = l.Start(sender, mid, c.wall.Now().Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != Done || string(st.Reply) != "ran once" {
		if st.Ticket != nil {
			st.Ticket.Abandon()
		}
		t.Fatalf("a retry 10 s after the run, once the clock was corrected after a restart, got %s: the handler would run a second time", st.State)
	}
	c.tick(3*time.Minute, 3*time.Minute) // its lifetime has elapsed
	if n, err := l.Sweep(c.wall.Now()); err != nil || n != 1 {
		t.Fatalf("a sweep after the entry's lifetime reclaimed %d entries (%v), want 1", n, err)
	}
	if u := l.Usage(); u.Entries != 0 || u.Bytes != 0 {
		t.Fatalf("usage after the reclaim: %+v, want none", u)
	}
}

// TestRestartAfterLongDowntimeSetAsideNeverRefuses: the entries a log
// opened with the clock ahead sets aside cannot be told from those of a
// real long downtime (the wall clock is the only witness). Attack: the
// set-aside entries fill the budget (or a caller's share), and after a
// real week offline every caller is refused ledger_full until their
// remaining time has elapsed. What should happen (AGENT-22): set-aside
// entries are counted in Usage but charged to no quota, and they give
// way (oldest first) whenever the budget needs their room: the first
// callers after the restart are served, and the set-aside entries leave.
func TestRestartAfterLongDowntimeSetAsideNeverRefuses(t *testing.T) {
	c := newRestartClock()
	lim := Limits{Budget: 16 << 10, PerCaller: 16 << 10, ReplyReserve: MinReplyReserve}
	path := filepath.Join(t.TempDir(), "l.wal")
	open := func() *WALStore { return c.openNoSync(t, path, lim) }
	s := open()
	filled := 0
	for i := 0; ; i++ {
		k := Key{Sender: "did:key:zOld", ID: id(i)}
		// Lifetimes of a week: the budget is full when the agent stops.
		if err := s.MarkRunningWithin(k, c.wall.Now().Add(7*24*time.Hour+time.Duration(i)*time.Second), MinReplyReserve); err != nil {
			if amp.NameOf(err) != ErrFull {
				t.Fatal(err)
			}
			break
		}
		if err := s.Finish(k, []byte("r")); err != nil {
			t.Fatal(err)
		}
		filled++
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.stamp(t, path)

	c.tick(8*24*time.Hour, time.Second) // a real week and a day offline
	s = open()
	defer s.Close()
	if u := s.Usage(); u.Entries != filled {
		t.Fatalf("usage after the restart: %d entries, want the %d set aside counted", u.Entries, filled)
	}
	for i := 0; i < filled; i++ {
		k := Key{Sender: "did:key:zNew", ID: id(i)}
		if err := s.MarkRunningWithin(k, c.wall.Now().Add(time.Hour), MinReplyReserve); err != nil {
			t.Fatalf("caller %d after a real week offline: %v (the set-aside entries hold the budget)", i, err)
		}
		if err := s.Finish(k, []byte("r")); err != nil {
			t.Fatal(err)
		}
	}
	if u := s.Usage(); u.Bytes > lim.Budget+lim.Budget/8 {
		t.Fatalf("usage %+v: the set-aside entries did not give way", u)
	}
}

// TestRestartSetAsideLostEntryFinishes: an entry an earlier process left
// running and the open set aside (the clock ahead) gives a retry Lost;
// its outcome, once known, is recorded within the quotas, and the entry
// is then an ordinary one (Usage counts it once).
func TestRestartSetAsideLostEntryFinishes(t *testing.T) {
	c := newRestartClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c.wall, c.opts(Limits{}))
	k := Key{Sender: "did:key:zA", ID: id(1)}
	if err := s.MarkRunning(k, c.wall.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	s.Close()
	c.stamp(t, path)
	c.tick(time.Hour, time.Second)
	s = openTestWAL(t, path, c.wall, c.opts(Limits{}))
	defer s.Close()
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Start(k.Sender, k.ID, c.wall.Now().Add(2*time.Minute))
	if err != nil || st.State != Lost {
		t.Fatalf("%v %v, want lost", st.State, err)
	}
	if err := st.Ticket.Finish([]byte("outcome")); err != nil {
		t.Fatal(err)
	}
	if u := l.Usage(); u.Entries != 1 || u.Bytes != entryCost(k, int64(len("outcome"))) {
		t.Fatalf("usage %+v, want the one entry at its reply's cost", u)
	}
	c.tick(-time.Hour+time.Second, time.Second)
	st, err = l.Start(k.Sender, k.ID, c.wall.Now().Add(2*time.Minute))
	if err != nil || st.State != Done || string(st.Reply) != "outcome" {
		t.Fatalf("%v %q %v, want done", st.State, st.Reply, err)
	}
}

// TestRestartSetAsideOneSenderCannotEvict: set-aside entries give way when
// the budget needs their room. Attack: a sender who wants a victim's entry
// gone (to run the victim's message again once the clock is corrected)
// fills the budget with entries of its own. What should happen (AGENT-22):
// one sender holds at most its share (PerCaller, one principal's), and
// the set-aside entries leave only when the accounted bytes and theirs
// exceed the budget: while the shares of the others leave room, a sender
// filling its own evicts nothing; and each commit evicts a bounded number.
func TestRestartSetAsideOneSenderCannotEvict(t *testing.T) {
	c := newRestartClock()
	lim := Limits{Budget: 64 << 10, PerCaller: 8 << 10, ReplyReserve: MinReplyReserve}
	path := filepath.Join(t.TempDir(), "l.wal")
	s := c.openNoSync(t, path, lim)
	victims := 0
	for i := 0; victims < 150; i++ { // about half the budget, over many senders
		k := Key{Sender: fmt.Sprintf("did:key:zVictim%d", i%20), ID: id(i)}
		if err := s.MarkRunningWithin(k, c.wall.Now().Add(2*time.Minute), MinReplyReserve); err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(k, []byte("r")); err != nil {
			t.Fatal(err)
		}
		victims++
	}
	s.Close()
	c.stamp(t, path)
	c.tick(time.Hour, time.Second)
	s = c.openNoSync(t, path, lim)
	defer s.Close()
	before := s.Usage()
	if before.Entries != victims {
		t.Fatalf("%d entries set aside, want %d", before.Entries, victims)
	}
	own := 0
	for i := 0; ; i++ {
		k := Key{Sender: "did:key:zAttacker", ID: id(i)}
		err := s.MarkRunningWithin(k, c.wall.Now().Add(time.Hour), MinReplyReserve)
		if amp.NameOf(err) == ErrCallerFull {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Finish(k, []byte("r")); err != nil {
			t.Fatal(err)
		}
		own++
	}
	if left := s.Usage().Entries - own; left != victims {
		t.Fatalf("one sender filling its share (%d entries) evicted %d of %d set-aside entries", own, victims-left, victims)
	}
}
