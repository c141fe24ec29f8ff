package etcdledger_test

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// slowCommitStore opens a Store on c whose every etcd transaction
// takes commit longer (a member's slow fsync: each call answers well within
// OpTimeout), with generous limits.
func slowCommitStore(t *testing.T, c *etcdtest.Cluster, prefix string, commit, op time.Duration) *etcdledger.Store {
	t.Helper()
	cli := faultyClient(t, c, func(*pb.TxnRequest) (bool, bool) {
		time.Sleep(commit)
		return true, false
	})
	s, err := etcdledger.Open(etcdledger.Options{Client: cli, Prefix: prefix, Now: time.Now, OpTimeout: op,
		Limits: ledger.Limits{Budget: 1 << 30, PerCaller: 1 << 28, ReplyReserve: 1024}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// Attack (none needed: ordinary load): 64 messages of one principal (every
// caller the policy does not name shares "*") whose handlers end at about
// the same time, on a node whose etcd commits take 25 ms (a slow disk; each
// call answers in 1/40 of its OpTimeout). A node serialises one principal's
// counter transactions on its lock (FLEET-10), and the combiner never puts
// two of one principal in one etcd transaction, so the k-th Finish waits
// k-1 commits. Since FLEET-15 (combine.go principalLocks.lock, ops.go
// Finish) that wait was cut at OpTimeout and Finish returned
// ledger_contended: the handler already ran, so its reply went out
// unrecorded and every retry of the message was answered "outcome unknown"
// — a recorded reply lost under plain load, with etcd healthy (about half
// the Finishes, 29 to 37 of 64). Now (FLEET-20): a Finish is never refused
// for the queue; when the lock does not come in time it records the reply
// without the lock and without the refund (FLEET-14's rule), its own etcd
// call still bounded.
func TestFinishOfOnePrincipalNeverLosesReplyToLockQueue(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const op = time.Second
	s := slowCommitStore(t, c, "/finq/", 25*time.Millisecond, op)
	const n = 64
	exp := time.Now().Add(time.Minute)
	keys := make([]ledger.Key, n)
	for i := range keys {
		keys[i] = ledger.Key{Sender: "did:example:anyone-" + fmt.Sprint(i%8), ID: [16]byte{0xf1, byte(i)}}
	}
	s.SetPrincipal(func(string) string { return "*" }) // the policy's unnamed callers
	for _, k := range keys {                           // one after the other: no queue yet
		if r, err := s.Claim(k, exp); err != nil || r.Found || r.Wait != nil {
			t.Fatalf("claim: %+v %v", r, err)
		}
		if err := s.MarkRunning(k, exp); err != nil {
			t.Fatalf("running: %v", err)
		}
	}
	// The handlers end together.
	var failed atomic.Int64
	var first sync.Once
	releasedAt(n, func(i int) {
		if err := s.Finish(keys[i], []byte("reply")); err != nil {
			failed.Add(1)
			first.Do(func() { t.Logf("first failed Finish: %v (%s)", err, amp.NameOf(err)) })
		}
	})
	lost := 0
	for _, k := range keys {
		if rec, ok, err := s.Lookup(k); err != nil || !ok || rec.Reply == nil {
			lost++
		}
	}
	if failed.Load() > 0 || lost > 0 {
		t.Fatalf("%d of %d Finishes of one principal refused, %d replies not recorded, with each etcd commit 25 ms "+
			"(OpTimeout %v): the handler ran, its reply goes out unrecorded, and a retry is answered outcome_unknown",
			failed.Load(), n, lost, op)
	}
}
