package etcdledger_test

import (
	"bytes"
	"context"
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
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// interceptClient is an etcd client whose Txn and Range calls pass through
// txn and rng: each returns (invoke, fail) as faultyClient's fault does,
// and may block (the call's context is given).
func interceptClient(t *testing.T, c *etcdtest.Cluster,
	txn func(ctx context.Context, tr *pb.TxnRequest) (bool, bool),
	rng func(ctx context.Context, rr *pb.RangeRequest) (bool, bool)) *clientv3.Client {
	t.Helper()
	icpt := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		invoke, fail := true, false
		switch r := req.(type) {
		case *pb.TxnRequest:
			if strings.HasSuffix(method, "/Txn") {
				invoke, fail = txn(ctx, r)
			}
		case *pb.RangeRequest:
			if strings.HasSuffix(method, "/Range") {
				invoke, fail = rng(ctx, r)
			}
		}
		if invoke {
			if err := inv(ctx, method, req, reply, cc, opts...); err != nil {
				return err
			}
		}
		if fail {
			<-ctx.Done()
			return status.Error(codes.DeadlineExceeded, "review: reply lost")
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

// Attack: the clean-up of a given-up claim can run twice at once on one
// node: the cleaner's round copies its queue and runs each clean-up, while
// a copy of the same message arriving on the node finds its own untracked
// claim (claimHeld) and takes the same clean-up from the queue and runs it
// too (the round removes it only after it returns). FLEET-13 gives the
// entry's charge back to the node's tally both when a clean-up deletes the
// entry and when one finds the entry already gone (cleanup.go clean:
// "err == nil && gone" untallies even when its transaction's claim
// comparison failed, i.e. when it deleted nothing). The round deletes the
// entry and gives the charge back; the copy's clean-up reads the entry after
// that, finds it gone, and gives it back again. The second give-back comes
// off the other entries of the same bucket: the node's Budget (FLEET-3)
// then under-counts what it holds in etcd, and every such race lets it
// write one more entry past its budget. A sender needs only to resend a
// message the node refused while etcd was slow. Before FLEET-21: with one
// other entry of the bucket live, Usage reported 0 entries, 0 bytes. Now:
// one clean-up of a key runs at a time (taken under the cleaner's lock: the
// round skips one a copy's claimHeld runs, and claimHeld waits while the
// round runs one), so its charge is given back once.
func TestConcurrentCleanupsNeverGiveTallyBackTwice(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const prefix = "/tally2/"
	victim := ledger.Key{Sender: "did:example:refused", ID: [16]byte{0x15, 1}}
	entryKey := []byte(prefix + "e/" + hash16Test(victim.Sender) + "/" + hexID(victim.ID))
	var armed atomic.Bool
	var cleans atomic.Int32
	t1Held, range2, t1Applied := make(chan struct{}), make(chan struct{}), make(chan struct{})
	var heldOnce, rangeOnce atomic.Bool
	txn := func(ctx context.Context, tr *pb.TxnRequest) (bool, bool) {
		if !armed.Load() || !deletesClaimOnly(tr) || !writesKeyAtTop(tr, entryKey, true) {
			return true, false
		}
		switch cleans.Add(1) {
		case 1, 2: // Unclaim's undo, then its clean-up: answers lost, not applied
			return false, true
		case 3: // the round's clean-up: held until the copy's clean-up reads the entry
			if heldOnce.CompareAndSwap(false, true) {
				close(t1Held)
				select {
				case <-range2:
				case <-time.After(500 * time.Millisecond):
				case <-ctx.Done():
				}
				defer func() { go func() { time.Sleep(20 * time.Millisecond); close(t1Applied) }() }()
			}
		}
		return true, false
	}
	rng := func(ctx context.Context, rr *pb.RangeRequest) (bool, bool) {
		if heldOnce.Load() && bytes.Equal(rr.Key, entryKey) && rangeOnce.CompareAndSwap(false, true) {
			close(range2)
			select {
			case <-t1Applied:
			case <-ctx.Done():
			}
		}
		return true, false
	}
	cli := interceptClient(t, c, txn, rng)
	s, err := etcdledger.Open(etcdledger.Options{Client: cli, Prefix: prefix, Now: time.Now, OpTimeout: time.Second,
		Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 20, ReplyReserve: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Hour) // one bucket for both
	kept := ledger.Key{Sender: "did:example:kept", ID: [16]byte{0x15, 2}}
	var one ledger.Usage
	for _, k := range []ledger.Key{kept, victim} {
		if r, err := s.Claim(k, exp); err != nil || r.Found || r.Wait != nil {
			t.Fatalf("claim: %+v %v", r, err)
		}
		if k == kept {
			if err := s.MarkRunning(kept, exp); err != nil {
				t.Fatal(err)
			}
			one = s.Usage() // the kept entry's charge alone
		}
	}
	if u := s.Usage(); one.Entries != 1 || u.Entries != 2 {
		t.Fatalf("setup: tally %+v, then %+v after two claims that made their entries", one, u)
	}
	armed.Store(true)
	s.Unclaim(victim) // refused by its checks while etcd is slow: queued
	select {
	case <-t1Held:
	case <-time.After(etcdtest.Settle):
		t.Fatal("setup: the cleaner never retried the clean-up")
	}
	// A copy of the refused message arrives meanwhile.
	if r, err := s.Claim(victim, exp); err != nil {
		t.Logf("copy's claim: %+v %v", r, err)
	}
	eventually(t, "the clean-ups done", func() bool { return s.Stats().Cleanups == 0 })
	if n := count(t, c.Client(), prefix+"e/"); n != 1 {
		t.Fatalf("setup: %d entries in etcd, want 1 (the kept one)", n)
	}
	if u := s.Usage(); u.Entries != one.Entries || u.Bytes != one.Bytes {
		t.Fatalf("node tally %+v while etcd holds the kept entry alone (tally %+v): the refused message's charge "+
			"was given back twice, by the round's clean-up and by the copy's", u, one)
	}
}

// writesKeyAtTop reports whether tr, at its top level, deletes key (del)
// or puts it.
func writesKeyAtTop(tr *pb.TxnRequest, key []byte, del bool) bool {
	for _, op := range tr.Success {
		if d := op.GetRequestDeleteRange(); del && d != nil && bytes.Equal(d.Key, key) {
			return true
		}
		if p := op.GetRequestPut(); !del && p != nil && bytes.Equal(p.Key, key) {
			return true
		}
	}
	return false
}
