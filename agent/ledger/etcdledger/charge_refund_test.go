package etcdledger_test

// Review of FLEET-11 (the claim is the running record): threats found on
// a real 3-member cluster.

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// A node whose last write of a principal's counters showed the share full
// keeps admitting that principal once the charges have expired (threat:
// the counters "as this node last wrote them" are a guess Claim never
// compares when it says "no room", and MarkRunning trusts it without a
// read, so the principal, the shared one of every unnamed caller
// included, is refused caller_quota_exceeded on this node for as long as
// it lives, while etcd holds no charge at all).
func TestExpiredChargesNeverLockOutSenderOnThisNode(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.Client()
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: 8 << 10, ReplyReserve: 1 << 10}
	const skew = time.Second
	s, err := etcdledger.Open(etcdledger.Options{Endpoints: c.Endpoints(), Prefix: "/stale/", Now: time.Now, Limits: lim, MaxClockSkew: skew})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l := mustLedger(t, s, time.Now)
	const sender = "did:example:stale"
	short := time.Now().Add(10 * time.Second) // room for 7 Starts on a loaded machine
	// 6 entries of 1188 bytes fill the 8 KiB share; the 7th is refused.
	for i := 0; i < 7; i++ {
		st, err := l.Start(sender, [16]byte{0x51, byte(i)}, short)
		if err != nil || st.State != ledger.Fresh {
			t.Fatalf("start %d: %v %v", i, st.State, err)
		}
		err = st.Ticket.Running()
		if i < 6 && err != nil || i == 6 && amp.NameOf(err) != ledger.ErrCallerFull {
			t.Fatalf("running %d: %v", i, err)
		}
		st.Ticket.Abandon() // running ones stay charged until they expire
	}
	for deadline := short.Add(skew + etcdtest.Settle); count(t, cli, "/stale/") > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("entries and counters still in etcd %v after their messages expired", etcdtest.Settle)
		}
	}
	exp := time.Now().Add(time.Minute)
	fresh := openStore(t, c, "/stale/", lim)
	if err := fresh.MarkRunning(ledger.Key{Sender: sender, ID: [16]byte{0x52}}, exp); err != nil {
		t.Fatalf("a node that never saw the sender refuses it with no charge in etcd: %v", err)
	}
	st, err := l.Start(sender, [16]byte{0x53}, exp)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("start after expiry: %v %v", st.State, err)
	}
	defer st.Ticket.Abandon()
	if err := st.Ticket.Running(); err != nil {
		t.Fatalf("the node that last saw the share full refuses the sender after every charge expired "+
			"(etcd's counters sum to %d of %d): %v", counterSum(t, c, "/stale/"), lim.PerCaller, err)
	}
}

// A claim undone by the cleanup path (a Claim whose answer was lost, or
// an Unclaim whose transaction did not answer) gives its charge back, as
// FLEET-11 says of both (threat: each etcd hiccup, e.g. a leader change,
// leaves the principal charged for a message that has no entry and never
// ran, until the message expires: enough of them lock the sender out).
func TestUndoneClaimGivesItsChargeBack(t *testing.T) {
	c := etcdtest.Start(t, 3)
	for _, tc := range []struct {
		name, prefix string
		fault        func(*pb.TxnRequest) bool
		apply        bool // the faulty transaction reaches etcd
	}{
		{"claim answer lost", "/undone1/", putsClaim, true},
		{"unclaim unanswered", "/undone2/", deletesClaimOnly, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prefix := tc.prefix
			var armed atomic.Bool
			cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
				if tc.fault(tr) && armed.CompareAndSwap(true, false) {
					return tc.apply, true
				}
				return true, false
			})
			s, err := etcdledger.Open(etcdledger.Options{Client: cli, Prefix: prefix, Now: time.Now, OpTimeout: 5 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			l := mustLedger(t, s, time.Now)
			armed.Store(tc.apply) // the claim's own transaction, or the Unclaim's
			rev0 := revisionNow(t, c)
			st, err := l.Start("did:example:undone", [16]byte{0x61}, time.Now().Add(10*time.Minute))
			if tc.apply != (err != nil) {
				t.Fatalf("start: %v %v", st.State, err)
			}
			// From etcd's history, not its state now: the clean-up of a
			// lost claim may already have given the charge back (on a
			// loaded machine it did, before this read).
			if !chargedSince(t, c, prefix, rev0) {
				t.Fatal("the claim charged nothing")
			}
			if err == nil {
				armed.Store(true)
				st.Ticket.Abandon() // refused by its checks
			}
			ecli := c.Client()
			for deadline := time.Now().Add(etcdtest.Settle); s.Stats().Cleanups > 0 ||
				count(t, ecli, prefix+"c/") > 0 || count(t, ecli, prefix+"e/") > 0; time.Sleep(50 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the claim was not undone within %v", etcdtest.Settle)
				}
			}
			if sum := counterSum(t, c, prefix); sum != 0 {
				t.Fatalf("the claim was undone (no claim, no entry, nothing ran) but its charge of %d bytes stays until the message expires", sum)
			}
		})
	}
}

// A flood of one principal's claims through another node, all refused and
// given back, leaves this node admitting the principal (threat: a node
// that read the counters while the other node's claims held the share
// keeps that sum as its guess; the other node's refunds never reach it,
// so any caller of the shared principal of unnamed callers can, with
// messages the policy refuses, lock every unnamed caller out of one node
// until it restarts).
func TestOtherNodesRefundedFloodNeverLocksOutPrincipal(t *testing.T) {
	c := etcdtest.Start(t, 3)
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: 8 << 10, ReplyReserve: 1 << 10}
	a, b := openStore(t, c, "/refunded/", lim), openStore(t, c, "/refunded/", lim)
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	const sender = "did:example:flooded"
	exp := time.Now().Add(time.Minute)
	var flood []*ledger.Ticket
	for i := 0; i < 6; i++ { // the flood, on B: its claims fill the share
		st, err := lb.Start(sender, [16]byte{0x71, byte(i)}, exp)
		if err != nil || st.State != ledger.Fresh {
			t.Fatalf("B start %d: %v %v", i, st.State, err)
		}
		flood = append(flood, st.Ticket)
	}
	st, err := la.Start(sender, [16]byte{0x72}, exp) // A reads the full share back
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("A start: %v %v", st.State, err)
	}
	if err := st.Ticket.Running(); amp.NameOf(err) != ledger.ErrCallerFull {
		t.Fatalf("A running while the share is full: %v, want %s", err, ledger.ErrCallerFull)
	}
	st.Ticket.Abandon()
	for _, tk := range flood { // refused by the policy: every charge given back
		tk.Abandon()
	}
	if sum := counterSum(t, c, "/refunded/"); sum != 0 {
		t.Fatalf("counters %d after the flood was refused, want 0", sum)
	}
	st, err = la.Start(sender, [16]byte{0x73}, exp)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("A start after the flood: %v %v", st.State, err)
	}
	defer st.Ticket.Abandon()
	if err := st.Ticket.Running(); err != nil {
		t.Fatalf("A refuses the principal with no charge in etcd: %v", err)
	}
}

// Running refuses before the handler once etcd has ended the session
// lease that held the claim and another node has taken the message over
// (threat: FLEET-11's Running writes nothing and trusts the node's own
// view of its session, which lags etcd by up to a keep-alive interval, or
// a whole pause of the process: the handler then starts after another
// node has answered, and recorded, "outcome unknown ... it is not run
// again"; before FLEET-11 the Running transaction compared the claim).
func TestRunningRefusedAfterAnotherNodeTookTheClaimOver(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.Client()
	a, b := openStore(t, c, "/takeover/", ledger.Limits{}), openStore(t, c, "/takeover/", ledger.Limits{})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	const sender = "did:example:takeover"
	exp := time.Now().Add(time.Minute)
	sa, err := la.Start(sender, [16]byte{0x81}, exp)
	if err != nil || sa.State != ledger.Fresh {
		t.Fatalf("A start: %v %v", sa.State, err)
	}
	defer sa.Ticket.Abandon()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, "/takeover/c/", clientv3.WithPrefix())
	if err != nil || len(r.Kvs) != 1 {
		t.Fatalf("A's claim: %v %v", r, err)
	}
	// etcd ends A's session (as after a pause of A past its TTL)
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(r.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	sb := startAfterWaits(t, lb, sender, [16]byte{0x81}, exp)
	if sb.State != ledger.Lost {
		t.Fatalf("B after A's session ended: %v, want Lost", sb.State)
	}
	if err := sb.Ticket.Finish([]byte("outcome unknown")); err != nil {
		t.Fatal(err)
	}
	if err := sa.Ticket.Running(); err == nil {
		t.Fatal("A's Running succeeded (its handler would start) after B took the claim over and recorded \"outcome unknown\"")
	}
}

// revisionNow is the cluster's revision now.
func revisionNow(t *testing.T, c *etcdtest.Cluster) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := c.Client().Get(ctx, "/", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return r.Header.Revision
}

// chargedSince reports whether a usage counter under prefix was put to a
// positive value after revision rev: etcd's watch replays its history
// from rev+1, so a charge given back since is still seen.
func chargedSince(t *testing.T, c *etcdtest.Cluster, prefix string, rev int64) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	for wr := range c.Client().Watch(ctx, prefix+"u/", clientv3.WithPrefix(), clientv3.WithRev(rev+1)) {
		if err := wr.Err(); err != nil {
			t.Fatal(err)
		}
		for _, ev := range wr.Events {
			if n, err := strconv.ParseInt(string(ev.Kv.Value), 10, 64); ev.Type == clientv3.EventTypePut && err == nil && n > 0 {
				return true
			}
		}
	}
	return false
}
