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

// Attack (review 42 of cf82b42): "uncounted" lives only in this
// process's entryRef, never in the vanished charge a later remake takes
// off. Every unnamed caller shares the principal "*", so any sender keeps
// that principal's counter changing (other nodes' writes, on their own
// leases) while a victim's entry, gone with its bucket lease, is remade:
// after 16 changed counters the remake makes it uncounted (no charge on
// the counter). Its Finish then fails on etcd (the store error leaves the
// ticket open: Ticket.Finish may be called again), and the remade entry
// goes with its bucket lease in turn. The next Finish remakes it again
// with gone = the uncounted entry (ops.go remake: vanished{cost: old}),
// and vanished.takes takes that cost off the counter, which never held
// it (created before the uncounted entry, so "it still holds it"). Before
// (review 42): the principal's counter loses a whole charge that belongs to other
// callers' live entries: undercounted, its share admits that much more.
// Now: a remake of an uncounted entry takes nothing off (vanished cost
// 0), so the counter ends at what the
// others wrote plus the victim's done entry.
func TestRemakeOfUncountedEntryNeverTakesOthersChargeOff(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve = 8 << 10
	const sender = "did:example:remake-uncounted"
	k := ledger.Key{Sender: sender, ID: [16]byte{0x42, 0x10}}
	claimKey := keysOf("/remake-uncounted/", k).claim
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
	s, err := Open(Options{Client: cli, Prefix: "/remake-uncounted/", Now: time.Now, OpTimeout: time.Second,
		Observe: observe, Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: reserve}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	end := runEntry(t, s, k, time.Now().Add(time.Hour))
	revokeBucketLease(t, c, s, end)
	key := usageKey(s.prefix, hash16(s.principalOf(sender)), end)
	// The others keep writing through the remake; the Finish after it fails.
	failAt.Store(finishes.Load() + 2)
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
	if !ref.uncounted {
		t.Fatalf("setup: the remake was counted (%d writes)", writes.Load())
	}
	revokeBucketLease(t, c, s, ref.e.end)
	if _, found, err := s.Lookup(k); err != nil || found {
		t.Fatalf("setup: the remade entry still there after its lease went: %v %v", found, err)
	}
	others, _, err := s.readCounter("test", key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(k, []byte("handler ran")); err != nil {
		t.Fatalf("the retried Finish: %v", err)
	}
	want := others + entryCost(k, int64(len("handler ran")))
	if n, _, err := s.readCounter("test", key); err != nil || n != want {
		t.Fatalf("the counter holds %d (%v), want %d (the others' %d and the done entry): %d of the others' charge "+
			"was taken off as the vanished charge of an entry that was never counted", n, err, want, others, want-n)
	}
}

// deletesKey reports whether tr's success branch, or that of a
// transaction nested in it (combined), deletes key.
func deletesKey(tr *pb.TxnRequest, key string) bool {
	for _, op := range tr.Success {
		if d := op.GetRequestDeleteRange(); d != nil && string(d.Key) == key {
			return true
		}
		if n := op.GetRequestTxn(); n != nil && deletesKey(n, key) {
			return true
		}
	}
	return false
}
