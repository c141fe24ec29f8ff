package etcdledger

import (
	"context"
	"testing"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: a usage counter under a lease longer than any node grants. A
// node grants a bucket's lease until the bucket's end plus the clock
// skew and 1 s (leaseTTL), so etcd deletes the bucket's counters soon
// after it ends; but anyone with write access under the prefix (another
// fleet member with a bug or another MaxClockSkew, an operator's script,
// a compromised agent) can attach a counter to a lease of its own, and
// etcd allows a TTL of years (FLEET-33, "Not done"). Its bucket is in
// the past, so no node's charge ever writes it again under a lease of
// its own, and a refund keeps the lease it has. Before, it was summed
// into the principal's share for as long as that lease lived: holding
// the whole share, every new message of the principal (every unnamed
// caller shares "*") was refused 3005 caller_quota_exceeded, for a year.
// Now a counter whose bucket is over by the fleet's rules at this node's
// clock (its end, plus twice the skew, 1 s and counterGrace) counts no
// entry any node still answers: it is not summed, and the node deletes it
// (compared on its mod revision and its lease). A counter within its
// bucket's life under the same lease is still summed and kept.
func TestUsageCounterUnderALeaseOutlivingItsBucketIsNotSummedAndRemoved(t *testing.T) {
	c := etcdtest.Start(t, 1)
	cli := c.Client()
	defer cli.Close()
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	const skew = 30 * time.Second
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18}
	now := time.Now()
	clock := func() time.Time { return time.Now() }
	exp := now.Add(time.Hour)
	for i, tc := range []struct {
		name    string
		end     int64 // the planted counter's bucket end
		want    amp.ErrName
		removed bool
	}{
		{"its bucket over an hour ago", now.Unix() - 3600, "", true},
		{"its bucket over by the rules, just", now.Unix() - 2*30 - 1 - int64(counterGrace/time.Second) - 5, "", true},
		{"its bucket ended, within the skew and the grace", now.Unix() - 10, ledger.ErrCallerFull, false},
		{"the message's own bucket", bucketEnd(now, exp), ledger.ErrCallerFull, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const sender = "did:example:overlong-counter-lease"
			prefix := "/overlong-counter-lease/" + string(rune('a'+i)) + "/"
			s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: prefix, Now: clock, MaxClockSkew: skew, Limits: lim})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			counter := usageKey(s.prefix, hash16(s.principalOf(sender)), tc.end)
			g, err := cli.Grant(ctx, 365*24*3600) // a year: longer than any node grants
			if err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Put(ctx, counter, itoa(lim.PerCaller), clientv3.WithLease(g.ID)); err != nil {
				t.Fatal(err)
			}
			l, err := ledger.New(s, ledger.Options{Now: clock})
			if err != nil {
				t.Fatal(err)
			}
			st, err := l.Start(sender, [16]byte{0x37, byte(i)}, exp)
			if err != nil || st.State != ledger.Fresh {
				t.Fatalf("start: %v %v", st.State, err)
			}
			err = st.Ticket.Running()
			if err == nil {
				st.Ticket.Finish([]byte("ran"))
			} else {
				st.Ticket.Abandon()
			}
			if amp.NameOf(err) != tc.want {
				t.Fatalf("Running with a counter of the whole share under a year-long lease, %s: %v (%q), want %q",
					tc.name, err, amp.NameOf(err), tc.want)
			}
			present := func() bool {
				r, err := cli.Get(ctx, counter)
				if err != nil {
					t.Fatal(err)
				}
				return len(r.Kvs) == 1
			}
			if !tc.removed {
				if !present() {
					t.Fatal("a counter within its bucket's life was deleted")
				}
				return
			}
			for deadline := time.Now().Add(etcdtest.Settle); present(); time.Sleep(20 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("the counter of a bucket over is still there after %v, under its year-long lease", etcdtest.Settle)
				}
			}
		})
	}
}

// The counters of a bucket over by overEnd are decoded (a corrupt one is
// still refused: failing closed) but neither summed nor in vals; their
// revisions are kept for exact comparisons; a key naming no bucket end
// is summed as any; and the delete of each over or lease-less counter is
// queued with the lease it was read with, never one within its life.
func TestUsageCountersOfABucketOverAreLeftOutAndQueuedForDelete(t *testing.T) {
	kv := func(key, v string, lease int64) *mvccpb.KeyValue {
		return &mvccpb.KeyValue{Key: []byte(key), Value: []byte(v), Lease: lease, ModRevision: 5, CreateRevision: 4}
	}
	const over = 1000
	for _, tc := range []struct {
		name   string
		kvs    []*mvccpb.KeyValue
		sum    int64
		err    amp.ErrName
		queued int
	}{
		{"over, under a long lease", []*mvccpb.KeyValue{kv("/p/u/h/1000", "262144", 9), kv("/p/u/h/1001", "7", 9)}, 7, "", 1},
		{"over and corrupt", []*mvccpb.KeyValue{kv("/p/u/h/999", "garbage", 9)}, 0, ErrCounterCorrupt, 1},
		{"naming no end", []*mvccpb.KeyValue{kv("/p/u/h/x", "3", 9)}, 3, "", 0},
		{"within its life", []*mvccpb.KeyValue{kv("/p/u/h/5000", "11", 9)}, 11, "", 0},
		{"without a lease", []*mvccpb.KeyValue{kv("/p/u/h/5000", "11", 0)}, 0, ErrCounterCorrupt, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sn, strays, err := snapOf(&pb.RangeResponse{Kvs: tc.kvs}, 6, over)
			if amp.NameOf(err) != tc.err || err == nil && sn.sum != tc.sum {
				t.Fatalf("snap %+v %v, want sum %d, error %q", sn, err, tc.sum, tc.err)
			}
			if err == nil {
				for _, kv := range tc.kvs {
					end, ok := counterEnd(kv.Key)
					if _, in := sn.vals[string(kv.Key)]; in == (ok && end <= over) {
						t.Errorf("%s in vals: %v", kv.Key, in)
					}
					if sn.mods[string(kv.Key)] != 5 || sn.creates[string(kv.Key)] != 4 {
						t.Errorf("%s: revisions not kept", kv.Key)
					}
				}
			}
			cl := &cleaner{q: map[cleanup]struct{}{}, wake: make(chan struct{}, 1)}
			cl.once.Do(func() {}) // no goroutine: the queue is looked at, not run
			cl.strays(strays, true)
			if len(cl.q) != tc.queued {
				t.Fatalf("%d deletes queued, want %d: %+v", len(cl.q), tc.queued, cl.q)
			}
			for q := range cl.q {
				var lease int64 = -1
				for _, kv := range tc.kvs {
					if string(kv.Key) == q.counter {
						lease = kv.Lease
					}
				}
				if !q.stray || q.rev != 5 || q.lease != lease {
					t.Errorf("queued %+v, want a stray delete at revision 5 under lease %d", q, lease)
				}
			}
		})
	}
}
