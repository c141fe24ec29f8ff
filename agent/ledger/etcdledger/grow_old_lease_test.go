package etcdledger

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Threat (review): a Running that grows the entry made with its claim into
// a later bucket (a handler's longest run past the message's expiry
// bucket) writes under the later bucket's lease only, yet grow also got
// the lease of the bucket it leaves, for the old counter's write, which
// then moved that counter (another node's, holding other messages'
// charges) onto this node's lease. When the later bucket's cached lease
// was gone (revoked, a restored cluster: etcd refuses the write, nothing
// written), grow dropped both from the cache and granted both again:
// one more etcd round trip within the message's deadline, a Running
// refused when that grant failed though nothing needed it, and the old
// bucket's live lease replaced for every later entry of that bucket.
// Now (FLEET-24): the old counter's refund is a write that keeps its
// lease (takeOff, as every refund), so grow gets only the later bucket's
// lease; the charge still moves exactly: after Finish the old counter
// holds the other message's charge alone and the new one the recorded
// reply's.
func TestGrowGrantsNoLeaseForTheBucketItLeaves(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve = 8 << 10
	var grants atomic.Int64
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/grow-old-lease/", Now: time.Now, OpTimeout: 2 * time.Second,
		Limits: ledger.Limits{Budget: 1 << 22, PerCaller: 1 << 20, ReplyReserve: reserve},
		Observe: func(op string, _ time.Duration, err error) {
			if op == "lease" && err == nil {
				grants.Add(1)
			}
		}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const sender = "did:example:grow-old-lease"
	k, other, later := ledger.Key{Sender: sender, ID: [16]byte{0x24, 1}}, ledger.Key{Sender: sender, ID: [16]byte{0x24, 2}},
		ledger.Key{Sender: sender, ID: [16]byte{0x24, 3}}
	exp := time.Now().Add(time.Hour)
	moved := exp.Add(30 * time.Minute)
	end := runEntry(t, s, other, exp) // the old bucket's counter holds another message's charge
	newEnd := runEntry(t, s, later, moved)
	if newEnd == end {
		t.Fatalf("setup: %v and %v fell in one bucket", exp, moved)
	}
	revokeBucketLease(t, c, s, newEnd) // the later bucket's cached lease is gone
	if r, err := s.Claim(k, exp); err != nil || r.Found || r.Wait != nil {
		t.Fatalf("claim: %+v %v", r, err)
	}
	grants.Store(0)
	if err := s.MarkRunningWithin(k, moved, 0); err != nil {
		t.Fatalf("running past the message's bucket: %v", err)
	}
	if n := grants.Load(); n != 1 {
		t.Fatalf("the grow made %d lease calls, want 1 (the later bucket's lease, granted again): "+
			"it granted the lease of the bucket it leaves too, which it needs for nothing", n)
	}
	reply := []byte("ok")
	if err := s.Finish(k, reply); err != nil {
		t.Fatal(err)
	}
	u := usagePrefix(s.prefix, hash16(s.principalOf(sender)))
	snap, err := s.readUsage("test", u)
	if err != nil {
		t.Fatal(err)
	}
	old, grown := usageKey(s.prefix, hash16(s.principalOf(sender)), end), usageKey(s.prefix, hash16(s.principalOf(sender)), newEnd)
	if snap.vals[old] != entryCost(other, reserve) || snap.vals[grown] != entryCost(k, int64(len(reply))) || len(snap.vals) != 2 {
		t.Fatalf("counters %v: want the other message's %d on the old bucket's and the reply's %d on the later one's",
			snap.vals, entryCost(other, reserve), entryCost(k, int64(len(reply))))
	}
	// The old counter kept its lease: it goes with the other message's
	// entry, not with a lease granted for it by the grow.
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	ce, err := c.Client().Get(ctx, old)
	if err != nil || len(ce.Kvs) != 1 {
		t.Fatalf("old counter: %v %v", ce, err)
	}
	oe, err := c.Client().Get(ctx, keysOf(s.prefix, other).entry)
	if err != nil || len(oe.Kvs) != 1 || oe.Kvs[0].Lease != ce.Kvs[0].Lease {
		t.Fatalf("the old counter is on lease %x, the other message's entry on %v (%v)", ce.Kvs[0].Lease, oe, err)
	}
}
