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

// open opens the log at path with the default limits and fdatasync, on
// the wall clock and the clock that is never stepped.
func (c restartClock) open(t *testing.T, path string) *WALStore {
	t.Helper()
	return openTestWAL(t, path, c.wall, c.opts(Limits{}))
}

// runLifetime is the lifetime of the invocations the clock-ahead tests
// record and retry.
const runLifetime = 2 * time.Minute

// recordRun is the setup of the clock-ahead tests: it records one
// invocation of k in the log at path, through the store open returns, as
// an agent leaves it at its last write before a restart (the handler
// ran and answered reply; nil: left running, its outcome unknown), with
// its expiry runLifetime ahead of the wall clock, then closes the log and
// stamps it with the wall clock (the kernel's stamp of that write).
func (c restartClock) recordRun(t *testing.T, path string, open func() *WALStore, k Key, reply []byte) {
	t.Helper()
	s := open()
	if err := s.MarkRunning(k, c.wall.Now().Add(runLifetime)); err != nil {
		s.Close()
		t.Fatal(err)
	}
	if reply != nil {
		if err := s.Finish(k, reply); err != nil {
			s.Close()
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.stamp(t, path)
}

// retryFinds is the check of the clock-ahead tests: a retry of k on l,
// with expiry expires, must find what was recorded, want (Done with that
// reply; nil: Lost, its outcome unknown). Anything else (Fresh) would run
// the handler a second time; when says when the retry comes. The ticket
// a Lost retry takes is abandoned.
func retryFinds(t *testing.T, l *Ledger, k Key, expires time.Time, want []byte, when string) {
	t.Helper()
	st, err := l.Start(k.Sender, k.ID, expires)
	if err != nil {
		t.Fatal(err)
	}
	if st.Ticket != nil {
		defer st.Ticket.Abandon()
	}
	state := Done
	if want == nil {
		state = Lost
	}
	if st.State != state || (want != nil && string(st.Reply) != string(want)) {
		t.Fatalf("%s got %s, want %s: the handler would run a second time", when, st.State, state)
	}
}

// sweepReclaims sweeps l at the wall clock now and fails the test unless
// it reclaims exactly want entries; when says when the sweep comes.
func (c restartClock) sweepReclaims(t *testing.T, l *Ledger, want int, when string) {
	t.Helper()
	if n, err := l.Sweep(c.wall.Now()); err != nil || n != want {
		t.Fatalf("a sweep %s reclaimed %d entries (%v), want %d", when, n, err, want)
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
	k := Key{Sender: "did:key:zVictim", ID: id(1)}
	c.recordRun(t, path, func() *WALStore { return c.open(t, path) }, k, []byte("ran once"))

	c.tick(time.Hour, 5*time.Second) // the restart, with the clock an hour ahead
	s := c.open(t, path)
	defer s.Close()
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.sweepReclaims(t, l, 0, "with the clock ahead")
	c.tick(-time.Hour, 5*time.Second) // corrected: 10 s after the run
	retryFinds(t, l, k, c.wall.Now().Add(runLifetime), []byte("ran once"),
		"a retry 10 s after the run, once the clock was corrected after a restart,")
	c.tick(3*time.Minute, 3*time.Minute) // its lifetime has elapsed
	c.sweepReclaims(t, l, 1, "after the entry's lifetime")
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
	k := Key{Sender: "did:key:zA", ID: id(1)}
	c.recordRun(t, path, func() *WALStore { return c.open(t, path) }, k, nil)
	c.tick(time.Hour, time.Second)
	s := c.open(t, path)
	defer s.Close()
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Start(k.Sender, k.ID, c.wall.Now().Add(runLifetime))
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
	retryFinds(t, l, k, c.wall.Now().Add(runLifetime), []byte("outcome"), "a retry once the outcome was recorded")
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
