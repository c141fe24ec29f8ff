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

// Attack: a steady flood of messages the agent answers without running
// anything (PING, or requests its checks refuse), each with the longest
// ttl (MaxTTL, 7 days), so that whenever etcd is briefly slow (a leader
// election, a disk stall) some undos time out. Unclaim's one transaction
// (undoClaim) gives the entry's charge back to this node's budget tally
// only when it succeeds; when it fails, clean deletes the claim and entry
// and refunds the principal's counter in etcd, but never the tally. The
// refused message's default reservation then counts against the node's
// budget (FLEET-3) until its bucket ends, days later, while etcd holds
// nothing of it and the attacker's share is free again, so the flood
// continues at no cost: a few hundred such refusals pin a node's whole
// budget and every caller of that node is refused ledger_full (5004)
// until it restarts. Before FLEET-13: after 20 refusals whose undo timed out once,
// etcd holds no entry and no charge, and a Running of another sender is
// refused ledger_full. Now (FLEET-13): clean (and any path that deletes an entry
// this node charged) gives the charge back to the tally too.
// slowUndoStore opens a Store on c (OpTimeout 300 ms) whose Unclaim
// transactions (a delete of a claim, no put) time out, one each, while
// fail is positive; the clean-up that follows then goes through.
func slowUndoStore(t *testing.T, c *etcdtest.Cluster, prefix string, lim ledger.Limits) (*etcdledger.Store, *atomic.Int32) {
	t.Helper()
	fail := new(atomic.Int32)
	cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
		if deletesClaimOnly(tr) && fail.Add(-1) >= 0 {
			return false, true // the answer never comes
		}
		return true, false
	})
	s, err := etcdledger.Open(etcdledger.Options{Client: cli, Prefix: prefix, Now: time.Now, Limits: lim, OpTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, fail
}

func TestFailedUndosNeverPinNodesBudget(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const prefix = "/pin/"
	// "did:example:pin": 2*(15+17)+1024+96 = 1184 bytes an entry, 5 fit
	lim := ledger.Limits{Budget: 6000, PerCaller: 6000, ReplyReserve: 1024}
	s, fail := slowUndoStore(t, c, prefix, lim)
	l := mustLedger(t, s, time.Now)
	exp := time.Now().Add(time.Hour) // a long ttl: the leak lasts as long
	// A claim made bare (its guess stale) leaks nothing: more tries than 5.
	for i := 0; i < 20; i++ {
		st := startRetrying(t, l, "did:example:pin", [16]byte{0x70, byte(i)}, exp)
		if st.State != ledger.Fresh {
			t.Fatalf("start %d: %v", i, st.State)
		}
		fail.Store(1)
		st.Ticket.Abandon() // refused by its checks, while etcd is slow for one call
	}
	// Cleanups counts the given-up claims and refunds, not a parked
	// clean-up of a retried Start whose Claim answer was lost on a loaded
	// machine: that one waits for its message's hour (FLEET-31, FLEET-35)
	// and holds no charge of this node's tally.
	eventually(t, "the given-up claims cleaned", func() bool { return s.Stats().Cleanups == 0 })
	if u := s.Usage(); u.Entries != 0 || u.Bytes != 0 {
		t.Fatalf("the node's budget tally after every entry was cleaned: %+v, want nothing held", u)
	}
	if n := count(t, c.Client(), prefix+"e/"); n != 0 {
		t.Fatalf("%d entries left in etcd", n)
	}
	if sum := counterSum(t, c, prefix); sum != 0 {
		t.Fatalf("counters %d left in etcd", sum)
	}
	st := startRetrying(t, l, "did:example:victim", [16]byte{0x71}, exp)
	if st.State != ledger.Fresh {
		t.Fatalf("victim start: %v", st.State)
	}
	defer st.Ticket.Abandon()
	if err := st.Ticket.Running(); err != nil {
		t.Fatalf("another sender's Running: %v (node usage %+v, etcd holds nothing): "+
			"the refused messages' charges stay in the node's budget tally after clean deleted them", err, s.Usage())
	}
}
