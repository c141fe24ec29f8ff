package etcdledger_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// corruptCounters overwrites every usage counter under prefix with a value that
// does not decode (what a bug in another node, or a writer under the
// prefix, may leave: FLEET-9), and returns how many it overwrote.
func corruptCounters(t *testing.T, c *etcdtest.Cluster, prefix string) int {
	t.Helper()
	cli := c.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, prefix+"u/", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	for _, kv := range r.Kvs {
		if _, err := cli.Put(ctx, string(kv.Key), "garbage", clientv3.WithIgnoreLease()); err != nil {
			t.Fatal(err)
		}
	}
	return len(r.Kvs)
}

// Attack surface: as above, a corrupt usage counter of the principal,
// this time while a handler runs. Finish's refund first compares the
// counter as the node wrote it (now changed), then reads it: the read
// refuses it as corrupt and Finish returns that error, so the reply of a
// handler that ran is sent unrecorded and every retry is answered
// "outcome unknown". The store's own rule (Finish: "a counter that keeps
// changing is left charged rather than the reply unrecorded") is not
// applied to a counter it cannot read. Now (FLEET-14): record the reply without
// the refund (the charge stays until the bucket expires).
func TestCorruptCounterNeverLosesHandlersReply(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const prefix = "/corrupt-finish/"
	a, b := openStore(t, c, prefix, ledger.Limits{}), openStore(t, c, prefix, ledger.Limits{})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	const sender = "did:example:finish"
	id := [16]byte{0xf1}
	exp := time.Now().Add(time.Minute)
	st := startRetrying(t, la, sender, id, exp)
	if st.State != ledger.Fresh {
		t.Fatalf("start: %v", st.State)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if n := corruptCounters(t, c, prefix); n == 0 {
		t.Fatal("no counter to corrupt")
	}
	// the handler ran
	if err := st.Ticket.Finish([]byte("the handler's result")); err != nil {
		st.Ticket.Abandon()
		sb := startAfterWaits(t, lb, sender, id, exp)
		t.Fatalf("Finish after the handler ran: %v (%s); a retry is now %v: the result is lost for an unreadable refund",
			err, amp.NameOf(err), sb.State)
	}
	if sb := startAfterWaits(t, lb, sender, id, exp); sb.State != ledger.Done || string(sb.Reply) != "the handler's result" {
		t.Fatalf("retry on B: %v %q, want the recorded reply", sb.State, sb.Reply)
	}
}
