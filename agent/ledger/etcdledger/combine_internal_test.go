package etcdledger

import (
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// shapedTxn is a transaction of key k shaped as Finish's (3 comparisons,
// 4 operations) or, nested, as Claim's (2 comparisons; the claim's put
// and a nested transaction of 2 comparisons and 3 operations), every
// comparison true on a fresh prefix.
func shapedTxn(prefix string, k ledger.Key, nested bool) *txnReq {
	ks := keysOf(prefix, k)
	u := usagePrefix(prefix, hash16(k.Sender))
	absent := func(key string) clientv3.Cmp { return clientv3.Compare(clientv3.CreateRevision(key), "=", 0) }
	t := &txnReq{op: "finish", k: k, usage: u, dl: time.Now().Add(time.Minute), done: make(chan struct{})}
	if nested {
		t.op = "claim"
		t.cmp = []clientv3.Cmp{absent(ks.claim), clientv3.Compare(clientv3.Version(ks.entry), "<", 2)}
		t.then = []clientv3.Op{clientv3.OpPut(ks.claim, "token"), clientv3.OpTxn(
			[]clientv3.Cmp{absent(ks.entry), clientv3.Compare(clientv3.ModRevision(u), "<", 1).WithPrefix()},
			[]clientv3.Op{clientv3.OpPut(ks.entry, "running"), clientv3.OpPut(u+"1", "1"), clientv3.OpGet(u, clientv3.WithPrefix())},
			[]clientv3.Op{clientv3.OpGet(ks.entry), clientv3.OpGet(u, clientv3.WithPrefix())})}
	} else {
		t.cmp = []clientv3.Cmp{absent(ks.entry), absent(ks.claim), absent(u + "1")}
		t.then = []clientv3.Op{clientv3.OpPut(ks.entry, "done"), clientv3.OpDelete(ks.claim), clientv3.OpPut(u+"1", "1"),
			clientv3.OpGet(u, clientv3.WithPrefix())}
	}
	t.size, t.nest = opsSize(t.then)
	return t
}

// A batch of Finishes with one Claim among them is one etcd transaction
// etcd accepts (threat: etcd checks a nested transaction against what
// the combined one leaves of --max-txn-ops, so 31 Finishes and a Claim,
// 126 operations, were refused whole: 32 messages answered "unavailable"
// at once, the Finishes' replies sent unrecorded, a retry of each
// answered "outcome unknown").
func TestCombinedFinishesWithClaimNeverRefusedForNestedOps(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/nest/", Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	var all []*txnReq
	for i := 0; i < 32; i++ {
		k := ledger.Key{Sender: fmt.Sprintf("did:example:n%d", i), ID: [16]byte{byte(i)}}
		all = append(all, shapedTxn(s.prefix, k, i == 31))
	}
	s.combine.q = append([]*txnReq{}, all...)
	batches := 0
	for len(s.combine.q) > 0 {
		batch := s.combine.take()
		if len(batch) == 0 {
			t.Fatalf("%d transactions left that no batch takes", len(s.combine.q))
		}
		s.combine.commit(batch)
		batches++
	}
	for i, tr := range all {
		if tr.alone || tr.err != nil || tr.r == nil || !tr.r.Succeeded {
			t.Fatalf("transaction %d (%s) in a combined batch: alone %v, %v; want committed combined", i, tr.op, tr.alone, tr.err)
		}
	}
	if batches > 2 {
		t.Fatalf("32 transactions in %d batches, want 2: the bound leaves out more than the nested transaction needs", batches)
	}
}
