package ledger

import (
	"path/filepath"
	"testing"
	"time"
)

// TestClockAheadAtWriteNeverRunsARetryTwice: AGENT-18 keeps an entry
// until its expiry has passed on the wall clock and the time it had left
// at its write (its expiry less the wall clock then) has elapsed on the
// clock that is never stepped, but a receiver whose wall clock is ahead
// when it records the entry counts that time short by its offset
// (AGENT-28). Attack (no caller needed: a receiver's clock a minute
// ahead, corrected by NTP later): the sender's copy is accepted, the
// handler runs, the entry is reclaimed a minute before its true expiry,
// the clock is corrected, and the sender's retry (its expiry ahead again,
// so the receiver accepts it) gets Fresh: the handler runs a second time.
// What should happen (docs/SPEC-DECISIONS.md AGENT-29): the message's ts
// reaches the ledger (StartSent) and the entry is held until its lifetime
// as the sender counts it (expiry less ts) has elapsed since the write,
// whatever the wall clock says; never shorter than the wall clock's rule
// (a sender's clock ahead), and no longer than a message sent at the
// receiver's own now is held (a late one).
func TestClockAheadAtWriteNeverRunsARetryTwice(t *testing.T) {
	for _, tc := range []struct {
		name string
		// ahead is the receiver's wall clock's offset when it records
		// the entry (corrected before the retry); sent is the message's
		// ts from the true time of the write.
		ahead, sent time.Duration
		// reclaimed is when (true time from the write) the entry may be
		// reclaimed at the earliest.
		reclaimed time.Duration
	}{
		{name: "receiver a minute ahead at the write", ahead: time.Minute, reclaimed: runLifetime},
		{name: "late message, its ts 90 s old", sent: -90 * time.Second, reclaimed: runLifetime},
		{name: "sender's clock a minute ahead", sent: time.Minute, reclaimed: time.Minute + runLifetime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newRestartClock()
			s := c.openNoSync(t, filepath.Join(t.TempDir(), "l.wal"), Limits{})
			defer s.Close()
			l, err := New(s, Options{Now: c.wall.Now})
			if err != nil {
				t.Fatal(err)
			}
			sent := c.mono.Now().Add(tc.sent) // the true time is the monotonic clock's
			expires := sent.Add(runLifetime)
			c.tick(tc.ahead, 0)
			k := Key{Sender: "did:key:zVictim", ID: id(1)}
			st, err := l.StartSent(k.Sender, k.ID, sent, expires)
			if err != nil || st.State != Fresh {
				t.Fatalf("%v %v", st.State, err)
			}
			if err := st.Ticket.Running(); err != nil {
				t.Fatal(err)
			}
			if err := st.Ticket.Finish([]byte("ran once")); err != nil {
				t.Fatal(err)
			}
			if tc.ahead > 0 {
				// Past the expiry on the clock that is ahead, and past
				// the time left that clock counted at the write.
				c.tick(tc.ahead+time.Second, tc.ahead+time.Second)
				c.sweepReclaims(t, l, 0, "with the receiver's clock still ahead")
				c.tick(-tc.ahead, 0) // corrected: the expiry is ahead again
				retryFinds(t, l, k, expires, []byte("ran once"), "a retry once the receiver's clock was corrected")
			}
			// to moves both clocks to d after the write (true time).
			to := func(d time.Duration) {
				step := c.mono.Now().Sub(t0)
				c.tick(d-step, d-step)
			}
			to(tc.reclaimed - time.Second)
			c.sweepReclaims(t, l, 0, "a second before the entry's lifetime is up")
			to(tc.reclaimed + time.Second)
			c.sweepReclaims(t, l, 1, "a second after the entry's lifetime is up")
		})
	}
}
