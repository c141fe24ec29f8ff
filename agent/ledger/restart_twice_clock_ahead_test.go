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
	k := Key{Sender: "did:key:zVictim", ID: id(1)}
	c.recordRun(t, path, func() *WALStore { return c.open(t, path) }, k, []byte("ran once"))

	want := Usage{Entries: 1, Bytes: entryCost(k, int64(len("ran once")))}
	var s *WALStore
	for restart := 1; restart <= 2; restart++ { // both with the clock an hour ahead
		c.tick(10*time.Second, 10*time.Second)
		if restart == 1 {
			c.tick(time.Hour, 0)
		}
		s = c.open(t, path)
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
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.tick(-time.Hour, 0) // corrected: 20 s after the run, within its lifetime
	retryFinds(t, l, k, c.wall.Now().Add(runLifetime), []byte("ran once"),
		"a retry after two restarts with the clock ahead, once it was corrected,")
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
	k := Key{Sender: "did:key:zVictim", ID: id(1)}
	c.recordRun(t, path, func() *WALStore { return c.open(t, path) }, k, []byte("ran once"))

	c.tick(time.Hour+10*time.Second, 10*time.Second) // the first restart, an hour ahead
	s := c.open(t, path)
	c.tick(20*time.Second, 20*time.Second)
	for i := 0; i < 3; i++ { // others' invocations, recorded with the clock ahead
		o := Key{Sender: "did:key:zOther", ID: id(10 + i)}
		if err := s.MarkRunning(o, c.wall.Now().Add(runLifetime)); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	c.tick(10*time.Second, 10*time.Second) // the second restart, still ahead
	s = c.open(t, path)
	defer s.Close()
	if u := s.Usage(); u.Entries != 4 {
		t.Fatalf("usage after a second restart with the clock still ahead: %d entries, want 4 (the one set aside and the 3 recorded since)", u.Entries)
	}
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	c.tick(-time.Hour, 0) // corrected: 40 s after the run
	retryFinds(t, l, k, c.wall.Now().Add(runLifetime), []byte("ran once"),
		"a retry 40 s after the run, after two restarts with the clock ahead and writes between,")
	// Its time left: 2 min less the 20 s the first run counted up to its
	// last write (100 s from the second open); reclaimed once that has
	// elapsed and its expiry has passed.
	c.tick(95*time.Second, 95*time.Second)
	c.sweepReclaims(t, l, 0, "5 s before the entry's time is up")
	c.tick(10*time.Second, 10*time.Second)
	c.sweepReclaims(t, l, 1, "once the entry's time is up")
}
