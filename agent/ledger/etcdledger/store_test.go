package etcdledger_test

import (
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
	clientv3 "go.etcd.io/etcd/client/v3"
)

func openStore(t *testing.T, c *etcdtest.Cluster, prefix string, lim ledger.Limits) *etcdledger.Store {
	t.Helper()
	s, err := etcdledger.Open(etcdledger.Options{Endpoints: c.Endpoints(), Prefix: prefix, Now: time.Now, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func count(t *testing.T, cli *clientv3.Client, prefix string) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, prefix, clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return r.Count
}

// A recorded reply, and its quota counter, are not kept past the
// message's expiry (plus the fleet's clock skew, FLEET-6): etcd deletes
// them with their lease.
func TestEntriesDisappearAtMessageExpiry(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.Client()
	const skew = time.Second
	s, err := etcdledger.Open(etcdledger.Options{Endpoints: c.Endpoints(), Prefix: "/expiry/", Now: time.Now, MaxClockSkew: skew})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := ledger.New(s, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(5 * time.Second) // room for the calls below on a loaded machine
	st, err := l.Start("did:example:a", [16]byte{1}, expires)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("start: %v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	if err := st.Ticket.Finish([]byte("reply")); err != nil {
		t.Fatal(err)
	}
	if n := count(t, cli, "/expiry/e/"); n != 1 {
		t.Fatalf("%d entries before expiry, want 1", n)
	}
	if n := count(t, cli, "/expiry/c/"); n != 0 {
		t.Fatalf("%d claims left after Finish, want 0", n)
	}
	const late = 30 * time.Second // etcd's lease checker, on a loaded machine
	for deadline := expires.Add(skew + late); count(t, cli, "/expiry/") > 0; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("entry still in etcd %v after its message expired (plus the skew)", late)
		}
	}
	if time.Now().Before(expires.Add(skew)) {
		t.Fatal("entry deleted before its message expired (plus the skew)")
	}
	if st, err := l.Start("did:example:a", [16]byte{1}, time.Now().Add(time.Minute)); err != nil || st.State != ledger.Fresh {
		t.Fatalf("after expiry: %v %v, want fresh", st.State, err)
	}
}

// One sender's share holds across the fleet: entries marked through two
// processes count against one per-caller quota.
func TestCallerShareHoldsAcrossTwoAgents(t *testing.T) {
	c := etcdtest.Start(t, 3)
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: 8 << 10, ReplyReserve: 1 << 10}
	a, b := openStore(t, c, "/share/", lim), openStore(t, c, "/share/", lim)
	exp := time.Now().Add(time.Minute)
	admitted := 0
	var last error
	for i := 0; i < 20; i++ {
		s := a
		if i%2 == 1 {
			s = b
		}
		if last = s.MarkRunning(ledger.Key{Sender: "did:example:x", ID: [16]byte{byte(i)}}, exp); last != nil {
			break
		}
		admitted++
	}
	// each entry counts 2*(13+17) + 1024 + 96 = 1180 bytes: 6 fit in 8 KiB
	if admitted != 6 || amp.NameOf(last) != ledger.ErrCallerFull {
		t.Fatalf("admitted %d then %v; want 6 then %s", admitted, last, ledger.ErrCallerFull)
	}
	if err := b.MarkRunning(ledger.Key{Sender: "did:example:y", ID: [16]byte{1}}, exp); err != nil {
		t.Fatalf("another sender refused: %v", err)
	}
}

// A second copy on another process waits for the first one's reply (it
// never reads a running entry whose claimer is alive as lost).
func TestCopyOnOtherProcessWaitsForRunningReply(t *testing.T) {
	c := etcdtest.Start(t, 3)
	a, b := openStore(t, c, "/wait/", ledger.Limits{}), openStore(t, c, "/wait/", ledger.Limits{})
	la, _ := ledger.New(a, ledger.Options{Now: time.Now})
	lb, _ := ledger.New(b, ledger.Options{Now: time.Now})
	exp := time.Now().Add(time.Minute)
	st, err := la.Start("did:example:w", [16]byte{9}, exp)
	if err != nil || st.State != ledger.Fresh {
		t.Fatalf("a: %v %v", st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	sb, err := lb.Start("did:example:w", [16]byte{9}, exp)
	if err != nil || sb.State != ledger.Busy {
		t.Fatalf("b while a runs: %v %v, want busy", sb.State, err)
	}
	go func() { time.Sleep(200 * time.Millisecond); _ = st.Ticket.Finish([]byte("the reply")) }()
	<-sb.Wait
	// A Wait also ends after WaitPoll: on a loaded machine a's Finish may
	// come later, and b waits again.
	if sb = startAfterWaits(t, lb, "did:example:w", [16]byte{9}, exp); sb.State != ledger.Done || string(sb.Reply) != "the reply" {
		t.Fatalf("b after a finished: %v %q", sb.State, sb.Reply)
	}
}

// A bucket lease etcd no longer has (revoked, or a cluster restored from
// a backup) is granted again, not a refusal of every later invocation of
// its bucket.
func TestRevokedBucketLeaseIsGrantedAgain(t *testing.T) {
	c := etcdtest.Start(t, 3)
	cli := c.Client()
	s := openStore(t, c, "/revoked/", ledger.Limits{})
	exp := time.Now().Add(time.Minute)
	if err := s.MarkRunning(ledger.Key{Sender: "did:example:r", ID: [16]byte{1}}, exp); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := cli.Get(ctx, "/revoked/e/", clientv3.WithPrefix())
	if err != nil || len(r.Kvs) != 1 || r.Kvs[0].Lease == 0 {
		t.Fatalf("entry: %v %v", r, err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(r.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	if err := s.MarkRunning(ledger.Key{Sender: "did:example:r", ID: [16]byte{2}}, exp); err != nil {
		t.Fatalf("after the lease was revoked: %v", err)
	}
	if n := count(t, cli, "/revoked/e/"); n != 1 {
		t.Fatalf("%d entries, want the new one only", n)
	}
	// The same at a claim, which makes the entry (FLEET-11).
	if r, err = cli.Get(ctx, "/revoked/e/", clientv3.WithPrefix()); err != nil || len(r.Kvs) != 1 {
		t.Fatalf("entry: %v %v", r, err)
	}
	if _, err := cli.Revoke(ctx, clientv3.LeaseID(r.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	if c, err := s.Claim(ledger.Key{Sender: "did:example:r", ID: [16]byte{3}}, exp); err != nil || c.Found || c.Wait != nil {
		t.Fatalf("claim after the lease was revoked: %+v %v", c, err)
	}
	if n := count(t, cli, "/revoked/e/"); n != 1 {
		t.Fatalf("%d entries after the claim, want its running entry only", n)
	}
}
