package ledger

import (
	"path/filepath"
	"testing"
	"time"
)

// TestSecondRestartWithClockStillAheadNeverRunsTwice: AGENT-22 sets
// aside, at a restart with the wall clock ahead, the entries expired
// since the log's last write (its mtime). But every open wrote the file
// itself (it truncates the writer's reserve of zeros after the last
// group, which every log closed by its writer has), so the kernel stamped
// the log with the clock that was ahead. Attack (no caller needed: the
// agent restarted twice, a crash loop or an operator's restart, before
// NTP corrected the clock): the second open read that stamp as the log's
// last write and dropped every entry set aside by the first; once the
// clock was corrected, a retry got Fresh and the handler ran a second
// time. What should happen (docs/SPEC-DECISIONS.md AGENT-27): the open's
// own writes record nothing and keep the log's time of last write, so
// the second open sets the same entries aside, each with the same time
// left, counted once.
func TestSecondRestartWithClockStillAheadNeverRunsTwice(t *testing.T) {
	c := newRestartClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c.wall, c.opts(Limits{}))
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	k := Key{Sender: "did:key:zVictim", ID: id(1)}
	st, err := l.Start(k.Sender, k.ID, c.wall.Now().Add(2*time.Minute))
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

	want := Usage{Entries: 1, Bytes: entryCost(k, int64(len("ran once")))}
	for restart := 1; restart <= 2; restart++ { // both with the clock an hour ahead
		c.tick(10*time.Second, 10*time.Second)
		if restart == 1 {
			c.tick(time.Hour, 0)
		}
		s = openTestWAL(t, path, c.wall, c.opts(Limits{}))
		if u := s.Usage(); u.Entries != want.Entries || u.Bytes != want.Bytes {
			s.Close()
			t.Fatalf("usage after restart %d with the clock still ahead: %+v, want the entry set aside, counted once (%+v)", restart, u, want)
		}
		if u := s.acct.usage(); u.Entries != 0 || u.Bytes != 0 {
			s.Close()
			t.Fatalf("restart %d charged the set-aside entry to the quotas: %+v", restart, u)
		}
		if restart == 1 {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer s.Close()
	l, err = New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.tick(-time.Hour, 0) // corrected: 20 s after the run, within its lifetime
	st, err = l.Start(k.Sender, k.ID, c.wall.Now().Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != Done || string(st.Reply) != "ran once" {
		if st.Ticket != nil {
			st.Ticket.Abandon()
		}
		t.Fatalf("a retry after two restarts with the clock ahead, once it was corrected, got %s: the handler would run a second time", st.State)
	}
}

// TestSecondRestartAfterWritesWithClockStillAheadNeverRunsTwice: the
// same attack with the agent at work between the restarts (AGENT-22 left
// it open): after the first restart with the clock ahead, other callers'
// invocations are recorded, and the kernel stamps the log with the wall
// clock that is ahead; the second open read that stamp as the log's last
// write and dropped the entries the first had set aside. What should
// happen (AGENT-27): while entries set aside at open are in the index,
// each group stamps the log with its time on the clock they are judged
// by (the first open's reference and the time elapsed since), so the
// second open sets them aside again with the time they have left: a
// retry once the clock is corrected gets the recorded reply, and once
// that time has elapsed they are reclaimed.
func TestSecondRestartAfterWritesWithClockStillAheadNeverRunsTwice(t *testing.T) {
	c := newRestartClock()
	path := filepath.Join(t.TempDir(), "l.wal")
	s := openTestWAL(t, path, c.wall, c.opts(Limits{}))
	k := Key{Sender: "did:key:zVictim", ID: id(1)}
	if err := s.MarkRunning(k, c.wall.Now().Add(2*time.Minute)); err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(k, []byte("ran once")); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	c.stamp(t, path)

	c.tick(time.Hour+10*time.Second, 10*time.Second) // the first restart, an hour ahead
	s = openTestWAL(t, path, c.wall, c.opts(Limits{}))
	c.tick(20*time.Second, 20*time.Second)
	for i := 0; i < 3; i++ { // others' invocations, recorded with the clock ahead
		o := Key{Sender: "did:key:zOther", ID: id(10 + i)}
		if err := s.MarkRunning(o, c.wall.Now().Add(2*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	c.tick(10*time.Second, 10*time.Second) // the second restart, still ahead
	s = openTestWAL(t, path, c.wall, c.opts(Limits{}))
	defer s.Close()
	if u := s.Usage(); u.Entries != 4 {
		t.Fatalf("usage after a second restart with the clock still ahead: %d entries, want 4 (the one set aside and the 3 recorded since)", u.Entries)
	}
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.tick(-time.Hour, 0) // corrected: 40 s after the run
	st, err := l.Start(k.Sender, k.ID, c.wall.Now().Add(2*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if st.State != Done || string(st.Reply) != "ran once" {
		if st.Ticket != nil {
			st.Ticket.Abandon()
		}
		t.Fatalf("a retry 40 s after the run, after two restarts with the clock ahead and writes between, got %s: the handler would run a second time", st.State)
	}
	// Its time left: 2 min less the 20 s the first run counted up to its
	// last write (100 s from the second open); reclaimed once that has
	// elapsed and its expiry has passed.
	c.tick(95*time.Second, 95*time.Second)
	if n, err := l.Sweep(c.wall.Now()); err != nil || n != 0 {
		t.Fatalf("a sweep 5 s before the entry's time is up reclaimed %d (%v), want 0", n, err)
	}
	c.tick(10*time.Second, 10*time.Second)
	if n, err := l.Sweep(c.wall.Now()); err != nil || n != 1 {
		t.Fatalf("a sweep once the entry's time is up reclaimed %d (%v), want 1", n, err)
	}
}
