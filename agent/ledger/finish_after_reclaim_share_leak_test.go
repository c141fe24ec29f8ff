package ledger

import (
	"path/filepath"
	"testing"
	"time"
)

// TestFinishAfterReclaimNeverLeaksSenderShare: before review 92, a Finish
// refunded the difference between the reply and its reservation up front
// (settle; since review 100 the refund is made when its record is applied); if
// the leader reclaims the running entry before the record is applied (its
// expiry passed on the wall clock and its lifetime elapsed: a handler that
// outlived its message), it releases the entry's whole cost, and then
// takes the refund back. The per-sender and per-principal counters stopped
// at zero, so the balance, below zero in between, was clamped, and the
// refund taken back stayed charged for good. Attack (a caller whose message
// outlives its short ttl in a slow handler with a large result limit, or
// a few such messages finishing together, each refund taken back in full;
// the Ledger then records the reply again within the quotas, as it
// should): the caller's share, or that of the principal it is counted
// under (the one all unnamed callers share), was held by bytes the ledger
// no longer held, and refused every message (caller_full), even the reply
// recorded again, until the agent restarted. What should happen
// (docs/SPEC-DECISIONS.md AGENT-23): the counters follow the sum of what is
// charged, whatever the order; once everything is reclaimed the share is
// free.
func TestFinishAfterReclaimNeverLeaksSenderShare(t *testing.T) {
	c := newRestartClock()
	lim := Limits{Budget: 1 << 20, PerCaller: 16 << 10, ReplyReserve: MinReplyReserve}
	s := c.openNoSync(t, filepath.Join(t.TempDir(), "l.wal"), lim)
	defer s.Close()
	l, err := New(s, Options{Now: c.wall.Now})
	if err != nil {
		t.Fatal(err)
	}
	const sender = "did:key:zSlow"
	for i, reserve := range []int64{lim.MaxReserve(), 0, 0} {
		st, err := l.Start(sender, id(i), c.wall.Now().Add(time.Second))
		if err != nil || st.State != Fresh {
			t.Fatalf("message %d: %v %v", i, st.State, err)
		}
		st.Ticket.Reserve(reserve)
		if err := st.Ticket.Running(); err != nil {
			st.Ticket.Abandon()
			t.Fatalf("message %d: the caller, holding nothing in the ledger (usage %+v), is refused: %v", i, l.Usage(), err)
		}
		c.tick(2*time.Second, 2*time.Second) // the handler outlives the message
		if err := st.Ticket.Finish([]byte("r")); err != nil {
			st.Ticket.Abandon()
			t.Fatalf("message %d: the reply, recorded again once its entry was reclaimed, is refused though the ledger holds nothing else of the caller (usage %+v): %v", i, l.Usage(), err)
		}
		c.tick(2*time.Minute, 2*time.Minute) // the reply recorded again is reclaimed in turn
		if _, err := l.Sweep(c.wall.Now()); err != nil {
			t.Fatal(err)
		}
		if u := l.Usage(); u.Entries != 0 || u.Bytes != 0 {
			t.Fatalf("message %d: usage %+v after the sweep, want none", i, u)
		}
	}
}
