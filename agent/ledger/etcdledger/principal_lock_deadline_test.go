package etcdledger_test

import (
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack: many messages of one principal (one sender, or every did:key
// caller sharing the policy's unnamed principal) in flight on a node while
// etcd stalls (a leader's disk, a partition: writes time out while the
// node's leases are cached). The node serialises one principal's
// transactions on a lock (principalLocks) that Claim holds across its etcd
// call, and the wait for that lock has no deadline: the k-th message is
// refused only after k-1 others each spent their OpTimeout. Before FLEET-15, 8 claims
// at once take about 8 x OpTimeout for the last refusal (docs/FLEET.md:
// "slower than 2 s: ERROR 5002 ... before the handler"; FLEET-8: N Starts
// refused in about one OpTimeout), and each holds a goroutine and the
// caller's connection meanwhile. Now (FLEET-15): every Claim, Running, Finish and
// Unclaim count its lock wait inside its own deadline (a lock with a
// timeout, or refuse when the deadline passes in the queue), so each
// message is refused within about one OpTimeout of its arrival.
func TestOnePrincipalsQueueNeverDelaysRefusalPastDeadline(t *testing.T) {
	c := etcdtest.Start(t, 3)
	var stalled atomic.Bool
	cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
		if stalled.Load() && putsClaim(tr) {
			return false, true // no answer before the deadline
		}
		return true, false
	})
	const op = 400 * time.Millisecond
	s, err := etcdledger.Open(etcdledger.Options{Client: cli, Prefix: "/queue/", Now: time.Now, OpTimeout: op})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const sender = "did:example:queue"
	exp := time.Now().Add(time.Minute)
	// Warm: the session lease and the bucket lease are cached.
	for deadline := time.Now().Add(etcdtest.Settle); ; time.Sleep(50 * time.Millisecond) {
		_, err := s.Claim(ledger.Key{Sender: sender, ID: [16]byte{0x01}}, exp)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("warm claim: %v", err)
		}
	}
	s.Unclaim(ledger.Key{Sender: sender, ID: [16]byte{0x01}})
	stalled.Store(true)
	const n = 8
	var worst atomic.Int64
	releasedAt(n, func(i int) {
		began := time.Now()
		_, err := s.Claim(ledger.Key{Sender: sender, ID: [16]byte{0x10, byte(i)}}, exp)
		if err == nil {
			t.Error("claim succeeded while etcd does not answer")
		}
		for d, w := int64(time.Since(began)), worst.Load(); d > w && !worst.CompareAndSwap(w, d); w = worst.Load() {
		}
	})
	if w := time.Duration(worst.Load()); w > 3*op {
		t.Fatalf("the slowest of %d claims of one principal took %v to be refused with OpTimeout %v: "+
			"each waited for the principal's lock behind the others' timed-out transactions", n, w, op)
	}
}
