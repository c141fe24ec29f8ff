package etcdledger

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: the running entry of a message goes with its bucket lease while
// its handler runs (lease churn, a clock that jumped, a restored cluster)
// on a node whose budget that entry fills (a small node, or a busy one).
// Finish remakes the entry (ops.go remake) with markNew's share and budget
// checks. Before, newEntry's budgetFull still counted the VANISHED entry's
// charge in this node's tally (remake gave it back only after the new
// entry was made): the remake was refused ledger_full for a budget held
// only by the entry it replaces, the handler's reply was never recorded,
// and every retry was answered "outcome unknown" — the loss remake was
// written to remove. Now: the remake's budget check counts the new cost
// less the vanished entry's (newEntry's freed).
func TestRemakeNeverRefusedForVanishedEntrysOwnCharge(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve, op = 8 << 10, 500 * time.Millisecond
	const sender = "did:example:remake-budget"
	k := ledger.Key{Sender: sender, ID: [16]byte{0x29, 3}}
	// The budget holds the running entry and a little more: not the
	// entry and its remade copy together.
	budget := entryCost(k, reserve) + entryCost(k, ledger.MinReplyReserve) - 1
	s := openStoreWithin(t, c, "/remake-budget/", op, ledger.Limits{Budget: budget, PerCaller: budget, ReplyReserve: reserve})
	l, err := ledger.New(s, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour)
	st, err := l.Start(sender, k.ID, exp)
	if err != nil || st.State != ledger.Fresh || st.Ticket == nil {
		t.Fatalf("start: %+v %v", st, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatalf("running: %v", err)
	}
	s.mu.Lock()
	end := s.running[k].e.end
	s.mu.Unlock()
	revokeBucketLease(t, c, s, end)
	if _, found, err := s.Lookup(k); err != nil || found {
		t.Fatalf("setup: entry still there after its lease went: %v %v", found, err)
	}
	ferr := st.Ticket.Finish([]byte("handler ran"))
	rec, found, lerr := s.Lookup(k)
	if ferr != nil || lerr != nil || !found || string(rec.Reply) != "handler ran" {
		t.Fatalf("the handler ran but its reply was not recorded (Finish: %v, %s; lookup: %+v %v %v; tally %d of "+
			"budget %d): the remake of the vanished entry was checked against a tally still holding the vanished "+
			"entry's own charge, so every retry is answered outcome_unknown",
			ferr, amp.NameOf(ferr), rec, found, lerr, s.Usage().Bytes, budget)
	}
}
