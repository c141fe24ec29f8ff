package etcdledger_test

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Verified property, kept as a pin: one sender's burst
// sprayed across three nodes at once, each node checking its guess of the
// counters and then writing, never admits more than the fleet-wide share
// (FLEET-3: the counters are compared on their mod revisions in the
// writing transaction), and the refused messages leave no charge behind.
func TestBurstAcrossThreeNodesNeverExceedsShare(t *testing.T) {
	c := etcdtest.Start(t, 3)
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: 8 << 10, ReplyReserve: 1 << 10}
	const prefix = "/burst/"
	var ls []*ledger.Ledger
	for i := 0; i < 3; i++ {
		ls = append(ls, mustLedger(t, openStore(t, c, prefix, lim), time.Now))
	}
	const sender = "did:example:burstshr" // 20 bytes: 2*(20+17)+1024+96 = 1194 a entry, 6 fit in 8 KiB
	exp := time.Now().Add(time.Minute)
	var ran atomic.Int64
	releasedAt(30, func(i int) {
		l := ls[i%3]
		st, err := l.Start(sender, [16]byte{0xb0, byte(i)}, exp)
		if err != nil {
			return // a retryable refusal (contended): nothing ran
		}
		if st.State != ledger.Fresh {
			t.Errorf("start %d: %v", i, st.State)
			return
		}
		if err := st.Ticket.Running(); err != nil {
			if !amp.AsError(err).Code.Retryable() {
				t.Errorf("running %d: %v", i, err)
			}
			st.Ticket.Abandon()
			return
		}
		ran.Add(1)
		if err := st.Ticket.Finish(make([]byte, 1024)); err != nil { // the whole reservation used
			t.Errorf("finish %d: %v", i, err)
		}
	})
	if r := ran.Load(); r == 0 || r > 6 {
		t.Fatalf("%d handlers ran for one sender across three nodes, the share holds 6 (and none ran: nothing tested)", r)
	}
	if sum, want := counterSum(t, c, prefix), ran.Load()*1194; sum != want {
		t.Fatalf("counters %d after %d runs, want %d: refusals left a charge, or a run none", sum, ran.Load(), want)
	}
}
