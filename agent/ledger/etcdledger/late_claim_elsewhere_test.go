package etcdledger_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack (FLEET-31): a Claim whose answer is lost (a deadline on a slow
// or partitioned etcd) is undone by the node's cleaner, found by its
// claim value. etcd may apply it only after that clean-up looked: the
// clean-up found no claim and was dropped, never retried, and the lost
// set was consulted only by a copy reaching the same node. The claim,
// under node A's live session lease, and its unrun entry stayed: the
// sender's retry on node B was Busy until the message expired, and had A
// stopped (a crash, a rolling restart) before then, every copy anywhere
// was answered "outcome unknown" for a handler that never ran. Now the
// clean-up stays queued until the message can no longer be accepted and
// looks again (at most SessionTTL apart): B's copy runs.
func TestClaimAppliedAfterItsCleanupLookedIsUndoneForCopiesElsewhere(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var armed atomic.Bool
	armed.Store(true)
	late := make(chan *pb.TxnRequest, 1)
	cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
		if armed.Load() && putsClaim(tr) && putsRunningEntry(tr) {
			armed.Store(false)
			late <- tr
			return false, true // held on the way: applied after the clean-up looked
		}
		return true, false
	})
	var looked atomic.Int64
	open := func(o etcdledger.Options) *etcdledger.Store {
		t.Helper()
		if o.Client == nil {
			o.Endpoints = c.Endpoints()
		}
		o.Prefix, o.Now = "/late-elsewhere/", time.Now
		s, err := etcdledger.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a := open(etcdledger.Options{Client: cli, OpTimeout: 500 * time.Millisecond, SessionTTL: 3 * time.Second,
		Observe: func(op string, _ time.Duration, err error) {
			if op == "unclaim" && err == nil {
				looked.Add(1) // the clean-up's read of the claim
			}
		}})
	b := open(etcdledger.Options{})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	id := [16]byte{0x31, 0xc5}
	expires := time.Now().Add(2 * time.Minute)
	if _, err := la.Start("did:example:late-elsewhere", id, expires); err == nil {
		t.Fatal("A's Start succeeded despite the lost answer")
	}
	eventually(t, "A's clean-up looks for the claim and finds none", func() bool { return looked.Load() > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	r, err := pb.NewKVClient(cli.ActiveConnection()).Txn(ctx, <-late) // etcd applies it now
	if err != nil || !r.Succeeded {
		t.Fatalf("late claim: %v %v", r, err)
	}
	claims, err := cli.Get(ctx, "/late-elsewhere/c/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil || claims.Count != 1 {
		t.Fatalf("setup: the late claim is not in etcd (%v, %v)", claims, err)
	}
	// The sender retries on node B: it may wait for A's claim as for any
	// live claim, but A must undo it while the message is accepted.
	st := startAfterWaits(t, lb, "did:example:late-elsewhere", id, expires)
	if st.State != ledger.Fresh {
		t.Fatalf("B's copy after A's late-applied claim: %v, want Fresh (nothing ran)", st.State)
	}
	st.Ticket.Abandon()
	if n := a.Stats().Cleanups; n != 0 {
		t.Errorf("A's clean-ups after its lost claim was undone: %d, want 0", n)
	}
}
