package ledger

import (
	"bytes"
	"testing"
	"time"
)

// TestRunningEntryOutlivesItsRunAndSurvivesReclaim: for every store, a
// ticket extended before Running keeps its entry through a sweep at the
// message's own expiry; and when the clock jumps past every expiry and the
// running entry is reclaimed, Finish records the reply again instead of
// failing (threat: a reply lost, and the key absent so that a retry runs
// the handler a second time).
func TestRunningEntryOutlivesItsRunAndSurvivesReclaim(t *testing.T) {
	for name, open := range stores(Limits{}) {
		t.Run(name, func(t *testing.T) {
			c := newClock()
			s, _ := open(t, c)
			l, err := New(s, Options{Now: c.Now})
			if err != nil {
				t.Fatal(err)
			}
			st, err := l.Start("did:key:caller", id(1), t0.Add(time.Minute))
			if err != nil || st.State != Fresh {
				t.Fatal(st.State, err)
			}
			st.Ticket.Extend(t0.Add(2 * time.Minute))
			st.Ticket.Extend(t0) // never earlier
			if err := st.Ticket.Running(); err != nil {
				t.Fatal(err)
			}
			c.Add(90 * time.Second) // past the message's expiry, within the run
			if n, err := l.Sweep(c.Now()); err != nil || n != 0 {
				t.Fatalf("sweep reclaimed %d running entries (%v)", n, err)
			}
			c.Add(time.Hour) // a clock jump past every expiry
			if n, err := l.Sweep(c.Now()); err != nil || n != 1 {
				t.Fatalf("sweep after the jump reclaimed %d (%v)", n, err)
			}
			if err := st.Ticket.Finish([]byte("reply")); err != nil {
				t.Fatalf("finish after the entry was reclaimed: %v", err)
			}
			again, err := l.Start("did:key:caller", id(1), c.Now().Add(time.Minute))
			if err != nil || again.State != Done || !bytes.Equal(again.Reply, []byte("reply")) {
				t.Fatalf("after finish: %v %q %v", again.State, again.Reply, err)
			}
		})
	}
}
