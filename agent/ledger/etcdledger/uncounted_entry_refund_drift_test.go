package etcdledger

import (
	"context"
	"strconv"
	"strings"
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
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// uncountedSetup is a store on c (prefix) holding k's running entry made
// again uncounted (review 35: its counter kept changing through every
// try of the remake, so it was made without its charge), the Finish
// after that remake having failed on etcd (the ticket stays open). It
// returns the store, the usage counter of the remade entry's bucket and
// what that counter holds: the other callers' charges alone, none of the
// uncounted entry's.
func uncountedSetup(t *testing.T, c *etcdtest.Cluster, prefix string, k ledger.Key) (*Store, string, int64) {
	t.Helper()
	const reserve = 8 << 10
	claimKey := keysOf(prefix, k).claim
	var finishes, failAt atomic.Int64 // Txns that delete the claim; the first that fails (0: none)
	icpt := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if tr, ok := req.(*pb.TxnRequest); ok && strings.HasSuffix(method, "/Txn") && deletesKey(tr, claimKey) {
			if n, at := finishes.Add(1), failAt.Load(); at > 0 && n >= at {
				return status.Error(codes.DeadlineExceeded, "review: etcd did not answer")
			}
		}
		return inv(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(icpt)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	var counter atomic.Pointer[string]
	var writes atomic.Int64
	const base = 1 << 16 // the other callers' live entries on the counter
	observe := func(op string, _ time.Duration, _ error) {
		if key := counter.Load(); key != nil && op == "mark" {
			ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
			defer cancel()
			if _, err := c.Client().Put(ctx, *key, strconv.FormatInt(base+writes.Add(1), 10)); err != nil {
				t.Error(err)
			}
		}
	}
	s, err := Open(Options{Client: cli, Prefix: prefix, Now: time.Now, OpTimeout: time.Second,
		Observe: observe, Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: reserve}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	end := runEntry(t, s, k, time.Now().Add(time.Hour))
	revokeBucketLease(t, c, s, end)
	key := usageKey(s.prefix, hash16(s.principalOf(k.Sender)), end)
	failAt.Store(finishes.Load() + 2) // the remake goes through, the Finish after it fails
	counter.Store(&key)
	ferr := s.Finish(k, []byte("handler ran"))
	counter.Store(nil)
	failAt.Store(0)
	if amp.NameOf(ferr) != ledger.ErrLedgerIO {
		t.Fatalf("setup: the Finish after the remake should fail on etcd, got %v (%d finishes, %d writes)", ferr, finishes.Load(), writes.Load())
	}
	s.mu.Lock()
	ref := s.running[k]
	s.mu.Unlock()
	if !ref.uncounted || ref.e.end != end {
		t.Fatalf("setup: the remake was counted, or in another bucket (%d writes, end %d, want %d)", writes.Load(), ref.e.end, end)
	}
	others, _, err := s.readCounter("test", key)
	if err != nil {
		t.Fatal(err)
	}
	return s, key, others
}

// lostOnB ends node a's session (its claim with it: a node gone) and
// opens node B on c (prefix), whose claim of k finds k's entry running
// without a claimer: Lost, B to record "outcome unknown" in it.
func lostOnB(t *testing.T, c *etcdtest.Cluster, prefix string, a *Store, k ledger.Key) *Store {
	t.Helper()
	a.sess.revoke()
	b := openStoreWithin(t, c, prefix, 2*time.Second, ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: 8 << 10})
	r, err := b.Claim(k, time.Now().Add(time.Hour))
	if err != nil || !r.Found || r.Record.Reply != nil {
		t.Fatalf("setup: node B's claim should find the entry Lost: %+v %v", r, err)
	}
	return b
}

// Attack (review 97, the refactor's note (2)): an entry remade
// uncounted (its charge on no counter) is Finished a second time after
// the first Finish failed on etcd, as Ticket.Finish allows ("On a store
// error the ticket stays open: the caller may Finish again"). Only the
// remake branch of Finish (remakeFinishing) and the lockless refund
// (finished) look at "uncounted"; a Finish that starts on such an entry
// takes the refund of its unused reservation (reserve - len(reply)) off
// the counter, which never held that charge: it holds the other callers'
// charges, so theirs shrink. Before (review 97): the counter ended about
// a kilobyte below the truth, and the principal's share admitted that
// much more fleet-wide, once per such retry. Now (FLEET-22): finishRefund
// takes no refund for an uncounted entry, whichever Finish starts on it,
// and the counter holds exactly what it held.
func TestSecondFinishOfUncountedEntryRefundsNothing(t *testing.T) {
	c := etcdtest.Start(t, 1)
	k := ledger.Key{Sender: "did:example:second-finish-uncounted", ID: [16]byte{0x97, 0x01}}
	s, key, others := uncountedSetup(t, c, "/r97-second-finish/", k)
	if err := s.Finish(k, []byte("handler ran")); err != nil {
		t.Fatalf("the retried Finish: %v", err)
	}
	if n, _, err := s.readCounter("test", key); err != nil || n != others {
		t.Fatalf("the counter holds %d (%v), want %d (the others' charges): %d bytes of them were taken off "+
			"as the refund of an entry whose charge was never on the counter", n, err, others, others-n)
	}
}

// Attack (review 97): "uncounted" lives only in the remaking process's
// entryRef, never in etcd. That process then dies (or loses its session)
// before the reply is recorded: its claim goes, and another node's copy
// of the message finds the entry running without a claimer (Lost) and
// records "outcome unknown" in it. That node takes the refund of the
// entry's unused reservation off the counter named by the entry (it
// cannot know the charge never went there), which holds only the other
// callers' charges. Before (review 97): the counter ended below the
// truth (by the reservation less the 5001 reply), a share admitting that
// much more. Now (FLEET-22): the entry is written uncounted (state 3),
// so a finisher on any node sees that its charge is on no counter and
// takes nothing off.
func TestLostFinisherOfUncountedEntryRefundsNothing(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const prefix = "/r97-lost-uncounted/"
	k := ledger.Key{Sender: "did:example:lost-uncounted", ID: [16]byte{0x97, 0x02}}
	a, key, others := uncountedSetup(t, c, prefix, k)
	b := lostOnB(t, c, prefix, a, k)
	if err := b.Finish(k, []byte("outcome unknown")); err != nil {
		t.Fatalf("node B records outcome unknown: %v", err)
	}
	if n, _, err := b.readCounter("test", key); err != nil || n != others {
		t.Fatalf("the counter holds %d (%v), want %d (the others' charges): node B took %d bytes off "+
			"as the refund of an entry whose charge was never on the counter", n, err, others, others-n)
	}
}

// Attack (review 97): as above, node A dies after remaking k's entry
// uncounted, and node B finds it Lost; the remade entry then goes with
// its bucket lease too (revoked, a restored cluster) before B records
// "outcome unknown", so B makes it again (remake). B cannot know the
// vanished entry was never on the counter (review 42's rule, vanished
// cost 0 for an uncounted entry, holds only in the process that made
// it): its remake takes the vanished entry's whole cost off the counter,
// which holds the other callers' charges. Before (review 97): the
// counter ended an entry's cost (about 1.2 KiB) below the truth. Now
// (FLEET-22): B reads "uncounted" in the entry's value, its remake takes
// nothing off, and the counter holds the others' charges plus B's done
// entry.
func TestLostRemakeOfUncountedEntryTakesNothingOff(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const prefix = "/r97-lost-remake/"
	k := ledger.Key{Sender: "did:example:lost-remake-uncounted", ID: [16]byte{0x97, 0x03}}
	a, key, others := uncountedSetup(t, c, prefix, k)
	a.mu.Lock()
	end := a.running[k].e.end
	a.mu.Unlock()
	b := lostOnB(t, c, prefix, a, k)
	revokeBucketLease(t, c, a, end) // the remade entry goes with its lease
	reply := []byte("outcome unknown")
	if err := b.Finish(k, reply); err != nil {
		t.Fatalf("node B records outcome unknown: %v", err)
	}
	want := others + entryCost(k, int64(len(reply)))
	if n, _, err := b.readCounter("test", key); err != nil || n != want {
		t.Fatalf("the counter holds %d (%v), want %d (the others' %d and B's done entry): %d bytes of the others' "+
			"charges were taken off as the vanished charge of an entry that was never counted", n, err, want, others, want-n)
	}
}

// An uncounted running entry is written with state 3 and read back as
// running and uncounted, on any process (FLEET-22); recorded done, it is
// an ordinary done entry (state 2), and a state-3 value with reply bytes
// is refused as a running one with them is.
func TestUncountedEntryStateRoundTrips(t *testing.T) {
	run := entry{state: stateRunning, expires: time.UnixMilli(1_800_000_000_000), reserve: 1024, end: 1_800_000_001, uncounted: true}
	b := run.encode()
	if b[1] != stateUncounted {
		t.Fatalf("an uncounted running entry is written with state %d, want %d", b[1], stateUncounted)
	}
	e, err := decodeEntry(b)
	if err != nil || e.state != stateRunning || !e.uncounted {
		t.Fatalf("read back as state %d, uncounted %v (%v)", e.state, e.uncounted, err)
	}
	done := e
	done.state, done.reply = stateDone, []byte("r")
	if d := done.encode(); d[1] != stateDone {
		t.Fatalf("recorded done, it is written with state %d", d[1])
	}
	if _, err := decodeEntry(append(b, 'x')); amp.NameOf(err) != ErrBadValue {
		t.Fatalf("a state-3 entry with reply bytes: %v, want %s", err, ErrBadValue)
	}
}
