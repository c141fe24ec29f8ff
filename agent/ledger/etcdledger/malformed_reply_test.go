package etcdledger_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// manglingClient is an etcd client behind a misbehaving member or proxy:
// while *on holds a function, every answer to a Claim transaction (a put
// of a claim key) passes through it once etcd applied the request, and
// every answer to a lease grant through grant.
func manglingClient(t *testing.T, c *etcdtest.Cluster, on *atomic.Pointer[func(*pb.TxnResponse)], grant *atomic.Pointer[func(*pb.LeaseGrantResponse)]) *clientv3.Client {
	t.Helper()
	icpt := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if err := inv(ctx, method, req, reply, cc, opts...); err != nil {
			return err
		}
		if tr, ok := req.(*pb.TxnRequest); ok && strings.HasSuffix(method, "/Txn") && putsClaim(tr) {
			if f := on.Load(); f != nil {
				(*f)(reply.(*pb.TxnResponse))
			}
		}
		if g, ok := reply.(*pb.LeaseGrantResponse); ok && grant != nil {
			if f := grant.Load(); f != nil {
				(*f)(g)
			}
		}
		return nil
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(icpt)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	return cli
}

// entryKeyOf is the etcd key of the entry of (sender, id) under prefix
// (docs/FORMAT.md, "Ledger on etcd").
func entryKeyOf(prefix, sender string, id [16]byte) string {
	h := sha256.Sum256([]byte(sender))
	return prefix + "e/" + hex.EncodeToString(h[:16]) + "/" + hex.EncodeToString(id[:])
}

// startNoPanic is l.Start, a panic turned into a test failure.
func startNoPanic(t *testing.T, l *ledger.Ledger, sender string, id [16]byte, exp time.Time) (st ledger.Start, err error) {
	t.Helper()
	defer func() {
		if p := recover(); p != nil {
			t.Fatalf("Start panicked on a malformed etcd answer: %v", p)
		}
	}()
	return l.Start(sender, id, exp)
}

// runOnce runs the message (sender, id) through l: claimed Fresh (at
// once or after the undoing of a refused claim), Running, Finish.
func runOnce(t *testing.T, l *ledger.Ledger, sender string, id [16]byte, exp time.Time, reply string) {
	t.Helper()
	var st ledger.Start
	eventually(t, "the refused claim undone", func() bool {
		st = startRetrying(t, l, sender, id, exp)
		if st.State == ledger.Busy {
			<-st.Wait
			return false
		}
		return true
	})
	if st.State != ledger.Fresh {
		t.Fatalf("after the refusal: state %v, want Fresh (a refused claim leaves no record)", st.State)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatalf("running: %v", err)
	}
	if err := st.Ticket.Finish([]byte(reply)); err != nil {
		t.Fatalf("finish: %v", err)
	}
}

// Attack: a misbehaving etcd member, or a proxy in front of etcd, answers
// a Claim transaction with a reply of another shape than asked: fewer
// results, no header, a result of another kind, a read of one key with
// two key-values or with another key's. Before: the Store indexed the
// results without looking (claim.go: r.Responses[1], r.Header.Revision):
// the node's process panicked on the first such answer (every message of
// the fleet behind that proxy took a node down), or it answered a copy of
// one message with another message's recorded reply. Now every answer
// is checked against the transaction asked before it is used
// (replyFits, util.go): a refusal by name (ledger_value_corrupt, 5002,
// retryable), the claim's answer treated as lost (undone in the
// background: FLEET-7), never a panic, and the message runs once after.
func TestEtcdAnswerOfAnotherShapeIsRefusedNeverPanicsNorAnswersAnotherReply(t *testing.T) {
	c := etcdtest.Start(t, 1)
	putResult := &pb.ResponseOp{Response: &pb.ResponseOp_ResponsePut{ResponsePut: &pb.PutResponse{}}}
	cases := []struct {
		name string
		// done: the message is answered before the fault (the Claim then
		// fails, and its Else reads the entry); else it is new.
		done   bool
		mangle func(r *pb.TxnResponse, other *mvccpb.KeyValue)
	}{
		{name: "ResultsCutShort", mangle: func(r *pb.TxnResponse, _ *mvccpb.KeyValue) { r.Responses = r.Responses[:1] }},
		{name: "NoResults", mangle: func(r *pb.TxnResponse, _ *mvccpb.KeyValue) { r.Responses = nil }},
		{name: "NoHeader", mangle: func(r *pb.TxnResponse, _ *mvccpb.KeyValue) { r.Header = nil }},
		{name: "NestedResultsCutShort", mangle: func(r *pb.TxnResponse, _ *mvccpb.KeyValue) {
			if in := r.Responses[1].GetResponseTxn(); in != nil {
				in.Responses = in.Responses[:1]
			}
		}},
		{name: "ElseCutShort", done: true, mangle: func(r *pb.TxnResponse, _ *mvccpb.KeyValue) { r.Responses = r.Responses[:1] }},
		{name: "ElseResultOfAnotherKind", done: true, mangle: func(r *pb.TxnResponse, _ *mvccpb.KeyValue) { r.Responses[0] = putResult }},
		{name: "ElseReadOfAnotherKey", done: true, mangle: func(r *pb.TxnResponse, other *mvccpb.KeyValue) {
			r.Responses[0].GetResponseRange().Kvs = []*mvccpb.KeyValue{other}
		}},
		{name: "ElseReadOfTwoKeyValues", done: true, mangle: func(r *pb.TxnResponse, other *mvccpb.KeyValue) {
			rr := r.Responses[0].GetResponseRange()
			rr.Kvs = append([]*mvccpb.KeyValue{other}, rr.Kvs...)
		}},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var on atomic.Pointer[func(*pb.TxnResponse)]
			prefix := fmt.Sprintf("/mangled-%d/", i)
			s, err := etcdledger.Open(etcdledger.Options{Client: manglingClient(t, c, &on, nil), Prefix: prefix, Now: time.Now,
				OpTimeout: 2 * time.Second, Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18}})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			const sender = "did:example:mangled"
			exp := time.Now().Add(time.Hour)
			other, id := [16]byte{0x0e, byte(i)}, [16]byte{0x0f, byte(i)}
			runOnce(t, mustLedger(t, s, time.Now), sender, other, exp, "the other message's reply")
			if tc.done {
				runOnce(t, mustLedger(t, s, time.Now), sender, id, exp, "this message's reply")
			}
			cli := c.Client()
			defer cli.Close()
			ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
			defer cancel()
			g, err := cli.Get(ctx, entryKeyOf(prefix, sender, other))
			if err != nil || len(g.Kvs) != 1 {
				t.Fatalf("setup: the other entry: %v", err)
			}
			var mangled atomic.Int32
			f := func(r *pb.TxnResponse) {
				if mangled.Add(1) == 1 {
					tc.mangle(r, g.Kvs[0])
				}
			}
			on.Store(&f)
			// A fresh ledger: nothing of the message cached in this process.
			st, err := startNoPanic(t, mustLedger(t, s, time.Now), sender, id, exp)
			on.Store(nil)
			if mangled.Load() == 0 {
				t.Fatal("setup: no Claim transaction went through the proxy")
			}
			if err == nil {
				t.Fatalf("a mangled answer was used: state %v, reply %q", st.State, st.Reply)
			}
			if amp.NameOf(err) != etcdledger.ErrBadValue || !amp.AsError(err).Code.Retryable() {
				t.Fatalf("refused as %v, want %s (retryable)", err, etcdledger.ErrBadValue)
			}
			l := mustLedger(t, s, time.Now)
			if tc.done {
				st = startRetrying(t, l, sender, id, exp)
				if st.State != ledger.Done || string(st.Reply) != "this message's reply" {
					t.Fatalf("after the refusal: %v %q, want Done with its own reply", st.State, st.Reply)
				}
				return
			}
			runOnce(t, l, sender, id, exp, "this message's reply")
		})
	}
}

// Attack: the proxy answers a lease grant with lease 0, which etcd reads
// as no lease. Before: the session lease 0 was used, the claim written
// without a lease: never deleted, every copy of the message on any node
// Busy until it expired, the claim key kept in etcd for ever. Now the
// grant is refused (ledger_value_corrupt, 5002, retryable) and nothing is
// written; the next grant, answered right, is used.
func TestLeaseGrantAnsweredWithoutALeaseIsRefused(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var on atomic.Pointer[func(*pb.TxnResponse)]
	var grant atomic.Pointer[func(*pb.LeaseGrantResponse)]
	zero := func(g *pb.LeaseGrantResponse) { g.ID = 0 }
	grant.Store(&zero)
	const prefix = "/mangled-grant/"
	s, err := etcdledger.Open(etcdledger.Options{Client: manglingClient(t, c, &on, &grant), Prefix: prefix, Now: time.Now,
		Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const sender = "did:example:mangled-grant"
	exp := time.Now().Add(time.Hour)
	id := [16]byte{0x1e}
	st, err := startNoPanic(t, mustLedger(t, s, time.Now), sender, id, exp)
	if err == nil {
		t.Fatalf("a claim under lease 0 (none): state %v", st.State)
	}
	if amp.NameOf(err) != etcdledger.ErrBadValue {
		t.Fatalf("refused as %v, want %s", err, etcdledger.ErrBadValue)
	}
	cli := c.Client()
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	if g, err := cli.Get(ctx, prefix, clientv3.WithPrefix()); err != nil || len(g.Kvs) != 0 {
		t.Fatalf("written after a grant without a lease: %d keys, %v", len(g.Kvs), err)
	}
	grant.Store(nil)
	runOnce(t, mustLedger(t, s, time.Now), sender, id, exp, "the reply")
	g, err := cli.Get(ctx, entryKeyOf(prefix, sender, id))
	if err != nil || len(g.Kvs) != 1 || g.Kvs[0].Lease == 0 {
		t.Fatalf("the entry after a right grant: %v %v", g, err)
	}
}
