package etcdledger_test

// The claim is the running record (docs/SPEC-DECISIONS.md FLEET-11): what
// it saves, what it costs, and what it must keep.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
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

// countingStore is a Store whose etcd transactions are counted.
func countingStore(t *testing.T, c *etcdtest.Cluster, prefix string, lim ledger.Limits) (*etcdledger.Store, *atomic.Int64) {
	t.Helper()
	var txns atomic.Int64
	cli := faultyClient(t, c, func(*pb.TxnRequest) (bool, bool) { txns.Add(1); return true, false })
	s, err := etcdledger.Open(etcdledger.Options{Client: cli, Prefix: prefix, Now: time.Now, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, &txns
}

// A message that runs its handler waits for two etcd transactions in a
// row, not three (threat: the fleet's throughput is one Raft commit per
// message lower than it need be): the claim writes the running entry,
// MarkRunning writes nothing, Finish records the reply; a message refused
// by its checks is one transaction more (Unclaim) and leaves no record and
// no charge.
func TestClaimIsRunningRecordTwoCommitsPerRun(t *testing.T) {
	c := etcdtest.Start(t, 3)
	s, txns := countingStore(t, c, "/fold/", ledger.Limits{})
	l := mustLedger(t, s, time.Now)
	exp := time.Now().Add(time.Minute)
	st, err := l.Start("did:example:fold", [16]byte{1}, exp)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("start: %v %v", st.State, err)
	}
	if n := count(t, c.Client(), "/fold/e/"); n != 1 {
		t.Fatalf("%d entries after the claim, want 1 (the claim is the running record)", n)
	}
	before := txns.Load()
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if n := txns.Load() - before; n != 0 {
		t.Fatalf("Running made %d etcd transactions, want 0", n)
	}
	if err := st.Ticket.Finish([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	if n := txns.Load(); n != 2 {
		t.Fatalf("claim, running, finish: %d etcd transactions, want 2", n)
	}
	sum := counterSum(t, c, "/fold/")

	st, err = l.Start("did:example:fold", [16]byte{2}, exp)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("start: %v %v", st.State, err)
	}
	before = txns.Load()
	st.Ticket.Abandon() // refused by its checks: the handler never started
	if n := txns.Load() - before; n != 1 {
		t.Fatalf("Unclaim made %d etcd transactions, want 1", n)
	}
	if n := count(t, c.Client(), "/fold/e/"); n != 1 {
		t.Fatalf("%d entries after a refusal, want only the finished one", n)
	}
	if n := count(t, c.Client(), "/fold/c/"); n != 0 {
		t.Fatalf("%d claims left after a refusal, want 0", n)
	}
	if got := counterSum(t, c, "/fold/"); got != sum {
		t.Fatalf("counters after a refusal %d, want %d (its charge given back)", got, sum)
	}
	if u := s.Usage(); u.Entries != 1 {
		t.Fatalf("node usage after one run and one refusal: %+v, want 1 entry", u)
	}
}

// The price of the fold: a node that dies after its claim, before its
// handler starts, leaves a running entry, and every copy is answered
// "outcome unknown" (threat, the one that must never happen: the copy runs
// the handler while the dead node's may have run).
func TestNodeGoneBetweenClaimAndHandlerIsOutcomeUnknownNeverRun(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := openStore(t, c, "/gone/", ledger.Limits{}), openStore(t, c, "/gone/", ledger.Limits{})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	exp := time.Now().Add(time.Minute)
	st, err := la.Start("did:example:gone", [16]byte{3}, exp)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("A start: %v %v", st.State, err)
	}
	a.Close() // A dies before Running (its session ends with it)
	sb := startAfterWaits(t, lb, "did:example:gone", [16]byte{3}, exp)
	if sb.State != ledger.Lost {
		t.Fatalf("a copy on B after A died between claim and handler: %v, want Lost", sb.State)
	}
	if err := sb.Ticket.Finish([]byte("outcome unknown")); err != nil {
		t.Fatal(err)
	}
}

// A flood of claims of one principal's messages that are never checked
// (never Running) is charged at the claim, so the running entries it
// leaves in etcd stay within the principal's share, and each refusal gives
// its charge back (threat: unchecked messages, e.g. refused by the policy,
// that fill etcd past the share, or lock the principal out after they are
// refused).
func TestUncheckedClaimFloodStaysWithinShareAndIsGivenBack(t *testing.T) {
	c := etcdtest.Start(t, 3)
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: 8 << 10, ReplyReserve: 1 << 10}
	s := openStore(t, c, "/flood/", lim)
	l := mustLedger(t, s, time.Now)
	exp := time.Now().Add(time.Minute)
	var mu sync.Mutex
	var tickets []*ledger.Ticket
	var wg sync.WaitGroup
	for i := 0; i < 20; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			st, err := l.Start("did:example:flood", [16]byte{0xf0, byte(i)}, exp)
			if err != nil || st.State != ledger.Fresh {
				t.Errorf("start %d: %v %v", i, st.State, err)
				return
			}
			mu.Lock()
			tickets = append(tickets, st.Ticket)
			mu.Unlock()
		}()
	}
	wg.Wait()
	// each entry counts 2*(17+17) + 1024 + 96 = 1188 bytes: 6 fit in 8 KiB
	if n := count(t, c.Client(), "/flood/e/"); n > 6 {
		t.Fatalf("%d running entries for 20 unchecked claims, want at most the 6 the share holds", n)
	}
	if sum := counterSum(t, c, "/flood/"); sum > lim.PerCaller {
		t.Fatalf("counters %d past the share %d", sum, lim.PerCaller)
	}
	ran, full := 0, 0
	for _, tk := range tickets {
		switch err := tk.Running(); {
		case err == nil:
			ran++
			tk.Abandon()
		case amp.NameOf(err) == ledger.ErrCallerFull:
			full++
			tk.Abandon()
		default:
			t.Fatalf("running: %v", err)
		}
	}
	if ran != 6 || full != 14 {
		t.Fatalf("Running: %d ran, %d refused caller_quota_exceeded; want 6 and 14", ran, full)
	}
	if n := count(t, c.Client(), "/flood/e/"); n != 6 {
		t.Fatalf("%d entries, want the 6 that ran", n)
	}
	if sum := counterSum(t, c, "/flood/"); sum != 6*1188 {
		t.Fatalf("counters %d, want the 6 that ran (6 x 1188): the refused ones charge nothing", sum)
	}
}

// hash16Test is H(s) of docs/FORMAT.md, "Ledger on etcd".
func hash16Test(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:16])
}

func hexID(id [16]byte) string { return hex.EncodeToString(id[:]) }

// An entry that Running had to grow (a larger reservation, a later
// bucket: written again, version 2, still running) and whose claimer died
// is Lost for the next copy (threat: a copy that reads version 2 as
// "done or busy" and waits until the message expires).
func TestGrownEntryWithoutClaimerIsLostNotBusy(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.Client()
	a, b := openStore(t, c, "/grow/", ledger.Limits{}), openStore(t, c, "/grow/", ledger.Limits{})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	exp := time.Now().Add(time.Minute)
	st, err := la.Start("did:example:grow", [16]byte{4}, exp)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("A start: %v %v", st.State, err)
	}
	st.Ticket.Extend(time.Now().Add(10 * time.Minute)) // the handler's longest run
	st.Ticket.Reserve(512 << 10)
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, "/grow/e/", clientv3.WithPrefix())
	if err != nil || len(r.Kvs) != 1 || r.Kvs[0].Version != 2 {
		t.Fatalf("entry after a grown Running: %v %v, want version 2", r, err)
	}
	ttl, err := cli.TimeToLive(ctx, clientv3.LeaseID(r.Kvs[0].Lease))
	if err != nil || ttl.TTL < 9*60 {
		t.Fatalf("grown entry's lease TTL %v %v, want past the handler's longest run (10 min)", ttl, err)
	}
	a.Close() // A dies while its handler runs
	sb := startAfterWaits(t, lb, "did:example:grow", [16]byte{4}, exp)
	if sb.State != ledger.Lost {
		t.Fatalf("a copy on B: %v, want Lost", sb.State)
	}
	sb.Ticket.Abandon()
}

// During a rolling upgrade from the version that claimed and marked in
// two transactions, its keys read correctly: a claim alone (its value the
// bare node name) is Busy and, once its session ends, Fresh; a claim with
// a running entry made after it is Busy and then Lost (threat: an old
// node's running handler read as free).
func TestPreviousVersionClaimAndEntryReadDuringUpgrade(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.Client()
	s := openStore(t, c, "/upgrade/", ledger.Limits{})
	old := openStore(t, c, "/upgrade/", ledger.Limits{}) // writes the entry as the old Running did
	l := mustLedger(t, s, time.Now)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	exp := time.Now().Add(time.Minute)
	for _, tc := range []struct {
		id      byte
		running bool
		want    ledger.State
	}{{5, false, ledger.Fresh}, {6, true, ledger.Lost}} {
		k := ledger.Key{Sender: "did:example:old", ID: [16]byte{tc.id}}
		lease, err := cli.Grant(ctx, int64(etcdledger.DefaultSessionTTL/time.Second)) // the old node's session (FLEET-40)
		if err != nil {
			t.Fatal(err)
		}
		claimKey := "/upgrade/c/" + hash16Test("did:example:old") + "/" + hexID(k.ID)
		if _, err := cli.Put(ctx, claimKey, "0123456789abcdef", clientv3.WithLease(lease.ID)); err != nil {
			t.Fatal(err)
		}
		if tc.running {
			if err := old.MarkRunning(k, exp); err != nil { // not claimed by old: the old Running's writes
				t.Fatal(err)
			}
		}
		st, err := l.Start(k.Sender, k.ID, exp)
		if err != nil || st.State != ledger.Busy {
			t.Fatalf("id %d, old claim held: %v %v, want Busy", tc.id, st.State, err)
		}
		if _, err := cli.Revoke(ctx, lease.ID); err != nil { // the old node's session ends
			t.Fatal(err)
		}
		st = startAfterWaits(t, l, k.Sender, k.ID, exp)
		if st.State != tc.want {
			t.Fatalf("id %d after the old node's session ended: %v, want %v", tc.id, st.State, tc.want)
		}
		st.Ticket.Abandon()
	}
}
