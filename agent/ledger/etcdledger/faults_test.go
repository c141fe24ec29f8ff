package etcdledger_test

// Faults of a fleet's ledger: skewed clocks, answers lost on the wire,
// an etcd that fails for a while, hostile counters. A real 3-member
// cluster, one for all the subtests of a test.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// faultyClient is an etcd client whose Txn calls pass through fault:
// fault returns (invoke, fail): whether the call reaches etcd and whether
// the caller then sees DeadlineExceeded (a reply lost on the way back).
func faultyClient(t *testing.T, c *etcdtest.Cluster, fault func(*pb.TxnRequest) (invoke, fail bool)) *clientv3.Client {
	t.Helper()
	icpt := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if tr, ok := req.(*pb.TxnRequest); ok && strings.HasSuffix(method, "/Txn") {
			invoke, fail := fault(tr)
			if invoke {
				if err := inv(ctx, method, req, reply, cc, opts...); err != nil {
					return err
				}
			}
			if fail { // as on the wire: nothing comes back before the deadline
				<-ctx.Done()
				return status.Error(codes.DeadlineExceeded, "review: reply lost")
			}
			return nil
		}
		return inv(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(icpt)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// putsRunningEntry: the transaction puts a running entry (Claim's, in
// its nested transaction, or a Running's).
func putsRunningEntry(tr *pb.TxnRequest) bool {
	for _, op := range tr.Success {
		if p := op.GetRequestPut(); p != nil && bytes.Contains(p.Key, []byte("/e/")) && len(p.Value) >= 2 && p.Value[1] == 1 {
			return true
		}
		if in := op.GetRequestTxn(); in != nil && putsRunningEntry(in) {
			return true
		}
	}
	return false
}

// putsClaim: the transaction is a Claim's (a put of a claim key).
func putsClaim(tr *pb.TxnRequest) bool {
	for _, op := range tr.Success {
		if p := op.GetRequestPut(); p != nil && bytes.Contains(p.Key, []byte("/c/")) {
			return true
		}
	}
	return false
}

// deletesClaimOnly: the transaction is Unclaim's (a delete of a claim,
// with or without its entry and refund, and no put besides nested ones).
func deletesClaimOnly(tr *pb.TxnRequest) bool {
	claim := false
	for _, op := range tr.Success {
		if op.GetRequestPut() != nil {
			return false
		}
		if d := op.GetRequestDeleteRange(); d != nil && bytes.Contains(d.Key, []byte("/c/")) {
			claim = true
		}
	}
	return claim
}

func mustLedger(t *testing.T, s *etcdledger.Store, now func() time.Time) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(s, ledger.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// opener opens a Store on the test's cluster (its endpoints unless
// o.Client is set; time.Now unless o.Now is), closed with the test.
type opener func(t *testing.T, o etcdledger.Options) *etcdledger.Store

// Each fault, on one cluster: none runs a handler twice, none blocks a
// message for longer than etcd fails, none corrupts a quota.
func TestFleetLedgerFaultsNeverRunTwiceNorBlock(t *testing.T) {
	c := etcdtest.Start(t, 3)
	open := func(t *testing.T, o etcdledger.Options) *etcdledger.Store {
		t.Helper()
		if o.Client == nil {
			o.Endpoints = c.Endpoints()
		}
		if o.Now == nil {
			o.Now = time.Now
		}
		s, err := etcdledger.Open(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("NodeClockAheadNeverExpiresEntryEarly", func(t *testing.T) { faultNodeClockAheadNeverExpiresEntryEarly(t, c, open) })
	t.Run("LostAnswerNeverDrivesUsageNegative", func(t *testing.T) { faultLostAnswerNeverDrivesUsageNegative(t, c, open) })
	t.Run("LostClaimAnswerLeavesMessageRetryable", func(t *testing.T) { faultLostClaimAnswerLeavesMessageRetryable(t, c, open) })
	t.Run("LateAppliedClaimLeavesMessageRetryable", func(t *testing.T) { faultLateAppliedClaimLeavesMessageRetryable(t, c, open) })
	t.Run("LostRunningAnswerLeavesMessageRetryable", func(t *testing.T) { faultLostRunningAnswerLeavesMessageRetryable(t, c, open) })
	t.Run("FailedUnclaimRetriedUntilEtcdReturns", func(t *testing.T) { faultFailedUnclaimRetriedUntilEtcdReturns(t, c, open) })
	t.Run("AbandonAfterRunningNeverRunsAgain", func(t *testing.T) { faultAbandonAfterRunningNeverRunsAgain(t, c, open) })
	t.Run("OverflowingCountersRefusedAsCorrupt", func(t *testing.T) { faultOverflowingCountersRefusedAsCorrupt(t, c, open) })
	t.Run("LateUnclaimNeverDeletesNewerClaim", func(t *testing.T) { faultLateUnclaimNeverDeletesNewerClaim(t, c, open) })
}

// faultNodeClockAheadNeverExpiresEntryEarly: a node whose clock runs 5 s
// ahead grants the bucket lease of its entry: were the TTL END - its now +
// 1, the entry would be deleted 5 s before the message's ledger expiry while
// a node on the right clock still accepts a retry, and runs the handler a
// second time. The lease lasts MaxClockSkew longer (FLEET-6): the retry
// finds the reply.
func faultNodeClockAheadNeverExpiresEntryEarly(t *testing.T, c *etcdtest.Cluster, open opener) {
	ahead := func() time.Time { return time.Now().Add(5 * time.Second) }
	a := open(t, etcdledger.Options{Prefix: "/fault-skew/", Now: ahead})
	b := open(t, etcdledger.Options{Prefix: "/fault-skew/"})
	la, lb := mustLedger(t, a, ahead), mustLedger(t, b, time.Now)
	expires := time.Now().Add(10 * time.Second) // ts + ttl + skew, the same on every node
	id := [16]byte{0xa1}
	st, err := la.Start("did:example:skew", id, expires)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("A start: %v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if err := st.Ticket.Finish([]byte("reply of A")); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(expires.Add(-2500 * time.Millisecond)))
	st, err = lb.Start("did:example:skew", id, expires) // 2.5 s before the ledger expiry
	if err != nil {
		t.Fatal(err)
	}
	if st.State != ledger.Done {
		ran := st.Ticket != nil && st.Ticket.Running() == nil
		t.Fatalf("B, 2 s before the message expires: state %v (want Done with A's reply); B may run the handler again: %v", st.State, ran)
	}
}

// faultLostAnswerNeverDrivesUsageNegative: a Lost answer's Finish must not
// refund to this node's tally a reservation it never charged (another node
// marked the entry): Usage would go negative and the node's budget grow with
// every Lost answer.
func faultLostAnswerNeverDrivesUsageNegative(t *testing.T, c *etcdtest.Cluster, open opener) {
	a := open(t, etcdledger.Options{Prefix: "/fault-lost/"})
	b := open(t, etcdledger.Options{Prefix: "/fault-lost/"})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	id := [16]byte{0xb2}
	expires := time.Now().Add(time.Minute)
	st, err := la.Start("did:example:lost", id, expires)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("A start: %v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	a.Close() // node A dies while its handler runs (its session ends)
	st, err = lb.Start("did:example:lost", id, expires)
	if err != nil || st.State != ledger.Lost {
		t.Fatalf("B start: %v %v", st.State, err)
	}
	if err := st.Ticket.Finish([]byte("outcome unknown")); err != nil {
		t.Fatal(err)
	}
	if u := b.Usage(); u.Bytes < 0 || u.Entries < 0 {
		t.Fatalf("B's usage after answering one Lost: %+v (negative)", u)
	} else if u.Bytes != 0 || u.Entries != 0 {
		t.Fatalf("B's usage after answering one Lost: %+v, want nothing (B charged nothing)", u)
	}
}

// busyBound is how long a key may stay Busy after its claimer gave it up
// or etcd recovered: the session TTL (10 s) with room for a loaded
// machine, still well inside the tests' message TTL (1 min), so that a
// claim never removed fails the test.
const busyBound = 30 * time.Second

// startAfterWaits is l.Start, again after each Wait (at most busyBound)
// and each retryable refusal (startRetrying).
func startAfterWaits(t *testing.T, l *ledger.Ledger, sender string, id [16]byte, expires time.Time) ledger.Start {
	t.Helper()
	for deadline := time.Now().Add(busyBound); ; {
		st := startRetrying(t, l, sender, id, expires)
		if st.State != ledger.Busy {
			return st
		}
		if time.Now().After(deadline) {
			t.Fatalf("still Busy after %v", busyBound)
		}
		<-st.Wait
	}
}

// faultLostClaimAnswerLeavesMessageRetryable: the Claim transaction (the
// claim and its running entry, FLEET-11) is applied but its answer is lost:
// Start fails, the agent answers 5002 and nothing runs. The node undoes
// what the claim may have made (found by its claim value), so the sender's
// retry, on any node, runs the handler instead of being answered
// outcome_unknown until the message expires.
func faultLostClaimAnswerLeavesMessageRetryable(t *testing.T, c *etcdtest.Cluster, open opener) {
	var armed atomic.Bool
	armed.Store(true)
	cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
		if armed.Load() && putsClaim(tr) && putsRunningEntry(tr) {
			armed.Store(false)
			return true, true
		}
		return true, false
	})
	a := open(t, etcdledger.Options{Prefix: "/fault-lostclaim/", Client: cli, OpTimeout: 500 * time.Millisecond})
	b := open(t, etcdledger.Options{Prefix: "/fault-lostclaim/"})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	id := [16]byte{0xc4}
	expires := time.Now().Add(time.Minute)
	if _, err := la.Start("did:example:lostclaim", id, expires); err == nil {
		t.Fatal("Start succeeded despite the lost answer")
	}
	if st := startAfterWaits(t, lb, "did:example:lostclaim", id, expires); st.State != ledger.Fresh {
		t.Fatalf("the sender's retry on another node after Start failed: %v, want Fresh (nothing ran)", st.State)
	} else {
		st.Ticket.Abandon()
	}
}

// faultLateAppliedClaimLeavesMessageRetryable: a Claim transaction that
// times out on the way and is applied only after the node's cleanup looked
// for its claim (and found none) leaves a claim and a running entry the
// node does not track. The sender's retry on that node must undo both, not
// give up the claim alone: the entry would then read as Lost, and the
// message, which never ran, be answered outcome_unknown until it expires.
func faultLateAppliedClaimLeavesMessageRetryable(t *testing.T, c *etcdtest.Cluster, open opener) {
	var armed atomic.Bool
	armed.Store(true)
	var late *pb.TxnRequest
	cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
		if armed.Load() && putsClaim(tr) && putsRunningEntry(tr) {
			armed.Store(false)
			late = tr
			return false, true // not yet
		}
		return true, false
	})
	var looked atomic.Int64 // the cleanup's reads of the claim (FLEET-31: it stays queued)
	a := open(t, etcdledger.Options{Prefix: "/fault-late/", Client: cli, OpTimeout: 500 * time.Millisecond,
		Observe: func(op string, _ time.Duration, err error) {
			if op == "unclaim" && err == nil {
				looked.Add(1)
			}
		}})
	la := mustLedger(t, a, time.Now)
	id := [16]byte{0xc5}
	expires := time.Now().Add(time.Minute)
	if _, err := la.Start("did:example:late", id, expires); err == nil {
		t.Fatal("Start succeeded despite the lost answer")
	}
	eventually(t, "the cleanup looks, finds no claim", func() bool { return looked.Load() > 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := pb.NewKVClient(cli.ActiveConnection()).Txn(ctx, late) // applied late
	if err != nil || !r.Succeeded {
		t.Fatalf("late claim: %v %v", r, err)
	}
	if st := startAfterWaits(t, la, "did:example:late", id, expires); st.State != ledger.Fresh {
		t.Fatalf("the sender's retry on the node: %v, want Fresh (nothing ran)", st.State)
	} else {
		st.Ticket.Abandon()
	}
}

// faultLostRunningAnswerLeavesMessageRetryable: a Running that must write
// (a reservation above the default: the entry made at the claim grows) is
// applied but its answer is lost (a deadline, a dropped connection):
// Running reports a retryable refusal, the agent abandons the ticket and
// answers 5002, nothing ran. Unclaim deletes the entry made under its claim
// (FLEET-7), so the sender's retry runs the handler instead of being
// answered outcome_unknown forever.
func faultLostRunningAnswerLeavesMessageRetryable(t *testing.T, c *etcdtest.Cluster, open opener) {
	var armed atomic.Bool
	cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
		if armed.Load() && putsRunningEntry(tr) {
			armed.Store(false)
			return true, true
		}
		return true, false
	})
	a := open(t, etcdledger.Options{Prefix: "/fault-amb/", Client: cli})
	b := open(t, etcdledger.Options{Prefix: "/fault-amb/"})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	id := [16]byte{0xc3}
	expires := time.Now().Add(time.Minute)
	st, err := la.Start("did:example:amb", id, expires)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("A start: %v %v", st.State, err)
	}
	armed.Store(true)
	st.Ticket.Reserve(512 << 10)
	if err := st.Ticket.Running(); err == nil {
		t.Fatal("Running succeeded despite the lost answer")
	} else {
		t.Logf("Running: %v (the agent answers 5002 and abandons; the handler never ran)", err)
	}
	st.Ticket.Abandon()
	if st := startAfterWaits(t, lb, "did:example:amb", id, expires); st.State != ledger.Fresh {
		t.Fatalf("the sender's retry after a retryable refusal: state %v (want Fresh: nothing ran); it is answered outcome_unknown forever", st.State)
	} else {
		st.Ticket.Abandon()
	}
}

// faultFailedUnclaimRetriedUntilEtcdReturns: an Unclaim whose delete fails
// (etcd unreachable for about 8 x OpTimeout) leaves the claim under the
// session lease, which lives as long as the node: were the retries bounded,
// every copy of the message on the other nodes would be Busy for as long as
// the node runs. The cleaner retries until etcd is back.
func faultFailedUnclaimRetriedUntilEtcdReturns(t *testing.T, c *etcdtest.Cluster, open opener) {
	var faulty atomic.Bool
	faulty.Store(true)
	cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
		if faulty.Load() && deletesClaimOnly(tr) {
			return false, true
		}
		return true, false
	})
	a := open(t, etcdledger.Options{Prefix: "/fault-stuck/", Client: cli, OpTimeout: 300 * time.Millisecond})
	b := open(t, etcdledger.Options{Prefix: "/fault-stuck/"})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	id := [16]byte{0xe5}
	expires := time.Now().Add(time.Minute)
	if st := startRetrying(t, la, "did:example:stuck", id, expires); st.State != ledger.Fresh {
		t.Fatalf("A start: %v", st.State)
	} else {
		st.Ticket.Abandon() // a retryable refusal; the delete fails
	}
	time.Sleep(2500 * time.Millisecond) // etcd fails for a while: the background retries fail too
	if n := a.Stats().Cleanups; n != 1 {
		t.Errorf("A's queued cleanups while etcd fails: %d, want 1 (kept, not dropped)", n)
	}
	faulty.Store(false) // etcd is fine again
	deadline := time.Now().Add(busyBound)
	for {
		st := startRetrying(t, lb, "did:example:stuck", id, expires)
		if st.State != ledger.Busy {
			if st.State != ledger.Fresh {
				t.Errorf("B after A's claim went: %v, want Fresh (nothing ran)", st.State)
			}
			if st.Ticket != nil {
				st.Ticket.Abandon()
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still Busy %v after etcd recovered (more than the session TTL): the claim of live node A is never removed", busyBound)
		}
		<-st.Wait
	}
}

// faultAbandonAfterRunningNeverRunsAgain: the cleanup of an abandoned ticket
// deletes the entry only when its Running's answer was lost: a ticket
// abandoned after a Running that succeeded (its handler may have run) leaves
// the entry, and a copy elsewhere is answered outcome_unknown, never run
// again.
func faultAbandonAfterRunningNeverRunsAgain(t *testing.T, c *etcdtest.Cluster, open opener) {
	a := open(t, etcdledger.Options{Prefix: "/fault-abandon/"})
	b := open(t, etcdledger.Options{Prefix: "/fault-abandon/"})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	id := [16]byte{0xa7}
	expires := time.Now().Add(time.Minute)
	st, err := la.Start("did:example:abandon", id, expires)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("A start: %v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	st.Ticket.Abandon() // the handler ran; its reply could not be recorded
	st, err = lb.Start("did:example:abandon", id, expires)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != ledger.Lost {
		t.Fatalf("B after A abandoned a running ticket: %v, want Lost", st.State)
	}
	st.Ticket.Abandon()
}

// faultOverflowingCountersRefusedAsCorrupt: two counters of 2^62 written
// under a principal's prefix by anything with write access would wrap an
// unchecked sum negative and lift the principal's fleet-wide share: a
// counter above MaxCounter (or a sum past it) is refused as corrupt, never
// summed.
func faultOverflowingCountersRefusedAsCorrupt(t *testing.T, c *etcdtest.Cluster, open opener) {
	a := open(t, etcdledger.Options{Prefix: "/fault-ovf/", Limits: ledger.Limits{PerCaller: 1 << 20}})
	ph := sha256.Sum256([]byte("did:example:ovf"))
	cli := c.Client()
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	// Under a lease, as a node writes counters: one without a lease is
	// refused for that alone (FLEET-33).
	g, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	for _, end := range []string{"1", "2"} {
		if _, err := cli.Put(ctx, "/fault-ovf/u/"+hex.EncodeToString(ph[:16])+"/"+end, "4611686018427387904", clientv3.WithLease(g.ID)); err != nil {
			t.Fatal(err)
		}
	}
	la := mustLedger(t, a, time.Now)
	st, err := la.Start("did:example:ovf", [16]byte{0xf6}, time.Now().Add(time.Minute))
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("start: %v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err == nil {
		t.Fatal("Running charged a principal whose counters sum past 2^63: the share is lifted")
	} else if amp.NameOf(err) != etcdledger.ErrCounterCorrupt {
		t.Fatalf("Running: %v, want %s", err, etcdledger.ErrCounterCorrupt)
	}
	st.Ticket.Abandon()
}

// faultLateUnclaimNeverDeletesNewerClaim: an Unclaim whose delete failed is
// retried in the background; the node's next claim of the same key has the
// same session lease, so a late delete guarded on the lease alone would
// remove the claim of a handler that runs now: a copy on another node would
// be answered outcome_unknown while A's handler runs, and A's result
// refused. The delete is guarded on the claim's create revision.
func faultLateUnclaimNeverDeletesNewerClaim(t *testing.T, c *etcdtest.Cluster, open opener) {
	var fails atomic.Int32
	fails.Store(2) // Unclaim's transaction, and its clean at once: queued
	cli := faultyClient(t, c, func(tr *pb.TxnRequest) (bool, bool) {
		if deletesClaimOnly(tr) && fails.Load() > 0 {
			fails.Add(-1)
			return false, true // never reaches etcd
		}
		return true, false
	})
	a := open(t, etcdledger.Options{Prefix: "/fault-unclaim/", Client: cli, OpTimeout: time.Second})
	b := open(t, etcdledger.Options{Prefix: "/fault-unclaim/"})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	id := [16]byte{0xd4}
	expires := time.Now().Add(time.Minute)
	st := startRetrying(t, la, "did:example:unclaim", id, expires)
	if st.State != ledger.Fresh {
		t.Fatalf("A start: %v", st.State)
	}
	st.Ticket.Abandon() // a retryable refusal before the handler; the delete fails
	var tk *ledger.Ticket
	for i := 0; i < 5 && tk == nil; i++ { // the sender's retry reaches A again
		st = startRetrying(t, la, "did:example:unclaim", id, expires)
		switch st.State {
		case ledger.Busy:
			<-st.Wait
		case ledger.Fresh:
			tk = st.Ticket
		default:
			t.Fatalf("A's retry: %v", st.State)
		}
	}
	if tk == nil {
		t.Fatal("A never got the ticket back")
	}
	if err := tk.Running(); err != nil {
		t.Fatal(err)
	}
	// A's handler runs; the background delete of the old claim fires.
	eventually(t, "A's queued delete of its old claim", func() bool { return a.Stats().Cleanups == 0 })
	if st = startRetrying(t, lb, "did:example:unclaim", id, expires); st.State != ledger.Busy {
		t.Errorf("a copy on B while A (alive) runs the handler: state %v, want Busy", st.State)
		if st.Ticket != nil {
			st.Ticket.Finish([]byte("outcome unknown"))
		}
	}
	if err := tk.Finish([]byte("A's result")); err != nil {
		t.Errorf("A's Finish: %v", err)
	}
}

// Every etcd call has a deadline; were the session lease granted under a
// mutex held across the network call, N concurrent Starts against an
// unreachable etcd would queue, make N grants, and the last wait about
// N x OpTimeout, not OpTimeout (docs: "slower is a refusal"). They share
// one grant: counted by Observe, and the slowest waits well under N x
// OpTimeout (a bound of N/2 x OpTimeout, loose enough for a loaded
// machine, where a queue would take twice that).
func TestUnreachableEtcdConcurrentClaimsShareOneLeaseGrant(t *testing.T) {
	const op = time.Second
	var grants atomic.Int64
	s, err := etcdledger.Open(etcdledger.Options{Endpoints: []string{"127.0.0.1:1"}, Now: time.Now, OpTimeout: op,
		Observe: func(o string, _ time.Duration, _ error) {
			if o == "lease" {
				grants.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	const n = 10
	var worst atomic.Int64
	var start sync.WaitGroup
	start.Add(n)
	done := make(chan struct{}, n)
	for i := 0; i < n; i++ {
		go func(i int) {
			start.Done()
			start.Wait() // all n at once
			began := time.Now()
			_, err := s.Claim(ledger.Key{Sender: "did:example:q", ID: [16]byte{byte(i)}}, time.Now().Add(time.Minute))
			if err == nil {
				t.Error("claim succeeded against an unreachable etcd")
			}
			if d := int64(time.Since(began)); d > worst.Load() {
				worst.Store(d)
			}
			done <- struct{}{}
		}(i)
	}
	for i := 0; i < n; i++ {
		<-done
	}
	if g := grants.Load(); g > n/2 {
		t.Errorf("%d concurrent claims made %d session lease grants: they queue, one grant each", n, g)
	}
	if w := time.Duration(worst.Load()); w > n/2*op {
		t.Fatalf("the slowest of %d concurrent claims took %v with OpTimeout %v", n, w, op)
	}
}
