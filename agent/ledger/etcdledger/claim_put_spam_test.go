package etcdledger_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack (FLEET-32): a copy of a message claimed by another node waits
// on a watch of the claim key, and its Wait closed on any event of that
// key. Anyone with write access under the prefix (a member's script, a
// compromised agent) that rewrites a held claim key (the same value,
// the same lease: nothing an honest node does, every claim being created
// only where none is) sent every waiting copy, on every node, back to
// Claim at each write: one etcd transaction per event per waiting copy,
// at the rate of the writes, queued in each node's combined transactions
// with the honest invocations. Now only the claim's delete (or WaitPoll)
// ends the wait; a put costs the waiting copies nothing.
func TestClaimKeyRewrittenUnderAWaitingCopyNeverWakesIt(t *testing.T) {
	c := etcdtest.Start(t, 1)
	open := func(poll time.Duration) *etcdledger.Store {
		s, err := etcdledger.Open(etcdledger.Options{Endpoints: c.Endpoints(), Prefix: "/claim-spam/", Now: time.Now, WaitPoll: poll})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	a, b := open(0), open(10*time.Minute)
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	id := [16]byte{0x32, 0x5a}
	expires := time.Now().Add(time.Minute)
	st := startRetrying(t, la, "did:example:claim-spam", id, expires)
	if st.State != ledger.Fresh {
		t.Fatalf("A: %v, want Fresh", st.State)
	}
	wait := startRetrying(t, lb, "did:example:claim-spam", id, expires)
	if wait.State != ledger.Busy {
		t.Fatalf("B: %v, want Busy (A holds the claim)", wait.State)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	r, err := cli.Get(ctx, "/claim-spam/c/", clientv3.WithPrefix())
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("setup: A's claim (%v, %v)", r, err)
	}
	claim := r.Kvs[0]
	// A watch of the test's own, from the same revision: once it has seen
	// every rewrite, so has B's (one member, one delivery to all).
	seen := cli.Watch(ctx, string(claim.Key), clientv3.WithRev(r.Header.Revision+1))
	const rewrites = 50
	for i := 0; i < rewrites; i++ {
		if _, err := cli.Put(ctx, string(claim.Key), string(claim.Value), clientv3.WithIgnoreLease()); err != nil {
			t.Fatal(err)
		}
	}
	for n := 0; n < rewrites; {
		w, ok := <-seen
		if !ok || w.Err() != nil {
			t.Fatalf("the test's watch: %v", w.Err())
		}
		n += len(w.Events)
	}
	time.Sleep(100 * time.Millisecond) // B's watch is served with the test's; a margin, not a bound
	select {
	case <-wait.Wait:
		t.Fatalf("B's wait ended on a rewrite of the claim A still holds: each of %d rewrites sends each waiting copy back to Claim", rewrites)
	default:
	}
	st.Ticket.Abandon() // A gives the claim up: its delete ends B's wait
	select {
	case <-wait.Wait:
	case <-ctx.Done():
		t.Fatal("B's wait did not end when A's claim went")
	}
	if st := startRetrying(t, lb, "did:example:claim-spam", id, expires); st.State != ledger.Fresh {
		t.Fatalf("B after A gave up: %v, want Fresh", st.State)
	} else {
		st.Ticket.Abandon()
	}
}
