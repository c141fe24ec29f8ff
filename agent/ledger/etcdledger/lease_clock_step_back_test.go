package etcdledger

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Threat (clock step): the bucket lease cache is keyed by the bucket's
// end on the wall clock, and a lease's TTL is that end less the wall
// clock at its grant (plus the skew). A node whose clock was ahead by D
// when it granted a bucket's lease (a VM booted from a wrong RTC, then
// stepped back by NTP) kept handing that lease to every later entry of
// the same bucket after its clock was corrected: those entries, written
// by a node now on time, were deleted by etcd D before their message's
// expiry (plus the skew), while every node still accepted a copy of the
// message, which then found no entry and ran its handler again. Here
// D = 30 s with a 1 s skew: the later entry's lease had about 12 s left
// where its message needs about 42 s. Now (FLEET-26) the cache keeps,
// on the clock that is never stepped, the earliest time each lease may
// end, and grants the bucket's lease again when a cached one would end
// more than a second too early.
func TestBucketLeaseGrantedWithClockAheadNeverShortensLaterEntries(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var ahead atomic.Int64 // how far the node's wall clock is ahead, ns
	now := func() time.Time { return time.Now().Add(time.Duration(ahead.Load())) }
	const skew = time.Second
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/lease-step/", Now: now, MaxClockSkew: skew,
		Limits: ledger.Limits{Budget: 1 << 22, PerCaller: 1 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const sender = "did:example:lease-step"
	early, later := ledger.Key{Sender: sender, ID: [16]byte{0x26, 1}}, ledger.Key{Sender: sender, ID: [16]byte{0x26, 2}}
	// Both messages expire in 40 s: 1 s granules whatever the clock, so
	// one bucket.
	exp := time.Now().Add(40 * time.Second)
	ahead.Store(int64(30 * time.Second)) // the clock ahead at the first grant
	end := runEntry(t, s, early, exp)
	ahead.Store(0) // stepped back to the right time
	if e := runEntry(t, s, later, exp); e != end {
		t.Fatalf("setup: the entries fell in buckets %d and %d", end, e)
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	g, err := c.Client().Get(ctx, keysOf(s.prefix, later).entry)
	if err != nil || len(g.Kvs) != 1 {
		t.Fatalf("entry: %v %v", g, err)
	}
	ttl, err := c.Client().TimeToLive(ctx, clientv3.LeaseID(g.Kvs[0].Lease))
	if err != nil {
		t.Fatal(err)
	}
	// What the entry needs, by the right clock: its bucket's end and the
	// skew (less a second of rounding and one of the test's own time).
	need := time.Until(time.Unix(end, 0).Add(skew)) - 2*time.Second
	if got := time.Duration(ttl.TTL) * time.Second; got < need {
		t.Fatalf("the entry written after the clock came back lives %v, its message needs %v: "+
			"it is on the lease granted while the clock was ahead, and a copy accepted in between runs again", got, need)
	}
}
