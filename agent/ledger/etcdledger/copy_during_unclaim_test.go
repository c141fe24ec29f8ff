package etcdledger_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack: send two copies of one message to one node at once. The first is
// refused by its checks (Unclaim), and the second's Claim lands while that
// Unclaim is in flight: Unclaim has already forgotten the claim
// (s.claims), so the copy's Claim finds this process's own untracked claim
// (claim.go claimHeld), finds no queued clean-up yet, and makes one of its
// own without the entry (entry: only for a lost Claim answer), deleting the
// claim alone. Unclaim's undo then finds the claim gone, and its clean-up
// (cleanup.go clean) leaves the entry, since its claim comparison fails and
// it returns nil ("the claim is gone: nothing of it to undo"). The
// unrun running entry now has no claimer: the copy's next Claim takes it as
// Lost, and the agent records "outcome unknown" for a message whose handler
// never ran; every retry of it gets that answer until it expires (and its
// charge stays on the sender's share and the node's budget meanwhile).
// Before FLEET-21: the copy's claim was answered Found (Lost). Now: Fresh —
// the copy waits (Busy, a watch of the claim key) while this process is
// still undoing its own claim of the key, then claims it anew.
func TestCopyDuringUnclaimNeverTurnsRefusedMessageOutcomeUnknown(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const prefix = "/copyun/"
	k := ledger.Key{Sender: "did:example:copies", ID: [16]byte{0x15, 3}}
	claimKey := []byte(prefix + "c/" + hash16Test(k.Sender) + "/" + hexID(k.ID))
	var claims atomic.Int32
	unclaiming := make(chan struct{})
	txn := func(ctx context.Context, tr *pb.TxnRequest) (bool, bool) {
		if writesKeyAtTop(tr, claimKey, false) && claims.Add(1) == 2 {
			// The copy's claim: it reaches etcd once Unclaim has begun.
			select {
			case <-unclaiming:
			case <-ctx.Done():
			}
		}
		return true, false
	}
	cli := interceptClient(t, c, txn, func(context.Context, *pb.RangeRequest) (bool, bool) { return true, false })
	s, err := etcdledger.Open(etcdledger.Options{Client: cli, Prefix: prefix, Now: time.Now, OpTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Minute)
	if r, err := s.Claim(k, exp); err != nil || r.Found || r.Wait != nil {
		t.Fatalf("first copy's claim: %+v %v", r, err)
	}
	copyDone := make(chan ledger.ClaimResult, 1)
	go func() {
		// The second copy: Busy, then claims again (as Ledger.Start does).
		for try := 0; try < 20; try++ {
			r, err := s.Claim(k, exp)
			if err != nil {
				time.Sleep(50 * time.Millisecond)
				continue
			}
			if r.Wait != nil {
				<-r.Wait
				continue
			}
			copyDone <- r
			return
		}
		copyDone <- ledger.ClaimResult{}
	}()
	for claims.Load() < 2 { // the copy's claim is on its way
		time.Sleep(time.Millisecond)
	}
	go func() { time.Sleep(100 * time.Millisecond); close(unclaiming) }()
	s.Unclaim(k) // the first copy refused by its checks: nothing ran
	var r ledger.ClaimResult
	select {
	case r = <-copyDone:
	case <-time.After(etcdtest.Settle):
		t.Fatal("the copy never got an answer")
	}
	if r.Found {
		t.Fatalf("the copy of a message whose handler never ran was answered Found (Lost: \"outcome unknown\", %+v): "+
			"the copy's claimHeld deleted the claim while Unclaim was undoing it, and the undo left the unrun entry", r)
	}
}
