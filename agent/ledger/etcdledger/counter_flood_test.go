package etcdledger

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// kvsOf counts the key-values of the reads in results, nested ones too.
func kvsOf(results []*pb.ResponseOp) int {
	n := 0
	for _, op := range results {
		if rr := op.GetResponseRange(); rr != nil {
			n += len(rr.Kvs)
		}
		if in := op.GetResponseTxn(); in != nil {
			n += kvsOf(in.Responses)
		}
	}
	return n
}

// Attack: anyone with write access under the ledger's prefix (another
// fleet node, an operator's script, a compromised agent) writes a flood
// of usage counters under one principal's prefix: here one more than
// the store's bound, each "0" (a valid count, as an earlier version
// wrote), under a lease, as a node writes them (a counter without one is
// refused on its own: FLEET-33). Every Claim, Running, Finish and
// Unclaim of that principal reads the whole prefix (docs/FORMAT.md,
// "Ledger on etcd"): before, each answer carried every counter (here
// 8,195 key-values; a million such keys, each transaction a hundred
// megabytes) and snapOf built three maps of them, for every message of
// the principal, while the keys lived (as long as the writer's lease).
// Now each read asks etcd for at most maxCountersOf(MaxClockSkew)
// counters (more than twice what one principal's live buckets can
// number) and a principal with more is refused by name
// (ledger_counter_corrupt, 5002), as one whose counters sum past 2^48
// is (FLEET-9): no answer carries more than the bound.
func TestPrincipalFloodedWithCountersIsRefusedWithoutReadingThemAll(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var most atomic.Int64
	icpt := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		err := inv(ctx, method, req, reply, cc, opts...)
		n := 0
		switch r := reply.(type) {
		case *pb.RangeResponse:
			n = len(r.Kvs)
		case *pb.TxnResponse:
			n = kvsOf(r.Responses)
		}
		for m := most.Load(); int64(n) > m && !most.CompareAndSwap(m, int64(n)); m = most.Load() {
		}
		return err
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(icpt)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	const prefix, sender = "/counter-flood/", "did:example:flooded"
	s, err := Open(Options{Client: cli, Prefix: prefix, Now: time.Now, MaxClockSkew: time.Second,
		Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	bound := maxCountersOf(time.Second)
	// The flood, written by another client: bound+1 counters of 0.
	other := c.Client()
	defer other.Close()
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	u := usagePrefix(prefix, hash16(sender))
	// Under a lease, as a node writes them: a counter without one is
	// refused on its own (FLEET-33), whatever their number.
	g, err := other.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i <= bound; i += 100 {
		var ops []clientv3.Op
		for j := i; j < min(i+100, bound+1); j++ {
			ops = append(ops, clientv3.OpPut(u+fmt.Sprint(1_000_000_000+j), "0", clientv3.WithLease(g.ID)))
		}
		if _, err := other.Txn(ctx).Then(ops...).Commit(); err != nil {
			t.Fatal(err)
		}
	}
	most.Store(0)
	l, err := ledger.New(s, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	st, err := l.Start(sender, [16]byte{0xf1}, time.Now().Add(time.Minute))
	if err == nil && st.State == ledger.Fresh {
		err = st.Ticket.Running()
		if err == nil {
			st.Ticket.Finish([]byte("ran"))
		} else {
			st.Ticket.Abandon()
		}
	}
	if err == nil {
		t.Fatalf("a principal with %d counters was charged (state %v): every transaction of it read them all", bound+1, st.State)
	}
	if amp.NameOf(err) != ErrCounterCorrupt || !strings.Contains(err.Error(), "counters") {
		t.Fatalf("refused as %v, want %s", err, ErrCounterCorrupt)
	}
	if n := most.Load(); n > int64(bound) {
		t.Fatalf("an answer carried %d key-values, over the bound of %d", n, bound)
	}
}
