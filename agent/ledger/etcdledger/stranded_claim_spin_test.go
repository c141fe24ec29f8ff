package etcdledger_test

import (
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

// Attack: a retry of a message whose given-up claim this node cannot
// delete (every delete of it refused at once: a member that fails fast,
// or any clean-up that fails quickly), sent to that same node. Claim
// finds its own untracked claim and runs the queued clean-up at once;
// before FLEET-17 it then answered Busy with a Wait already closed, and
// the agent's claim loop (agent/agent.go, claim) started the message again at
// once: hundreds of etcd calls a second from one retry, for as long as the
// sender's context lasted. Now a clean-up that fails answers a Wait that
// closes on the claim's change or after WaitPoll.
func TestStrandedOwnClaimNeverSpinsRetry(t *testing.T) {
	c := etcdtest.Start(t, 3)
	var broken atomic.Bool
	icpt := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, inv grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if tr, ok := req.(*pb.TxnRequest); ok && strings.HasSuffix(method, "/Txn") && broken.Load() && deletesClaimOnly(tr) {
			return status.Error(codes.Unknown, "test: the delete is refused at once")
		}
		return inv(ctx, method, req, reply, cc, opts...)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: c.Endpoints(), DialTimeout: 2 * time.Second, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(icpt)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cli.Close() })
	a, err := etcdledger.Open(etcdledger.Options{Client: cli, Prefix: "/spin/", Now: time.Now, OpTimeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	la := mustLedger(t, a, time.Now)
	const sender = "did:example:spin"
	id := [16]byte{0x5b}
	exp := time.Now().Add(time.Minute)
	st := startRetrying(t, la, sender, id, exp)
	if st.State != ledger.Fresh {
		t.Fatalf("start: %v", st.State)
	}
	broken.Store(true)
	st.Ticket.Abandon() // its undo and clean-up refused: queued
	// One retry on A, looping as the agent's claim does, for 2 s.
	before := a.Stats().Calls
	starts, busy := 0, 0
	for end := time.Now().Add(2 * time.Second); time.Now().Before(end); {
		s2, err := la.Start(sender, id, exp)
		starts++
		if err != nil {
			time.Sleep(50 * time.Millisecond) // a retryable refusal: the sender waits
			continue
		}
		if s2.State != ledger.Busy {
			if s2.Ticket != nil {
				s2.Ticket.Abandon()
			}
			t.Fatalf("retry: %v while the given-up claim stays, want busy", s2.State)
		}
		busy++
		<-s2.Wait
	}
	if busy == 0 {
		t.Fatal("never busy: nothing tested")
	}
	if calls := a.Stats().Calls - before; starts > 20 {
		t.Fatalf("one retry of a message whose clean-up fails started %d times in 2 s (%d etcd calls): "+
			"Busy with a closed Wait, the agent claims again at once", starts, calls)
	}
	broken.Store(false)
	eventually(t, "the given-up claim cleaned", func() bool { return a.Stats().Cleanups == 0 })
}
