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

// Attack: a slow or partitioned etcd loses the answers of many Claims
// (each refused retryably, and its undoing queued by its claim value:
// FLEET-7, FLEET-11). Each such clean-up looks again for its claim until
// its message expires (FLEET-31), up to maxCleanups (65,536) of them,
// for as long as a message's ttl (up to the agent's MaxTTL). Before,
// every round of the cleaner, once per SessionTTL, read each claim key
// with a Get of its own: 65,536 reads every 10 s, on the etcd that had
// just been too slow, for days. Now a round reads the claim keys of the
// lost claims it looks for together, combineMaxOps (128) to one
// read-only transaction (the shared read's bound, FLEET-12), and only a
// claim found applied (its value the clean-up's) is read again and
// undone: here 300 parked clean-ups cost 3 requests, one applied claim
// 3 more (its read, its entry's, its undoing), where they cost one Get
// each. A lost claim applied late is
// still undone, one past its expiry is dropped, and the rest stay parked.
func TestParkedLostClaimsAreLookedForInBoundedReads(t *testing.T) {
	c := etcdtest.Start(t, 1)
	// Every etcd call of the store, counted once (Observe), whatever
	// the client's own retries of it on the wire.
	var calls atomic.Int64
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/parked-lost/", Now: time.Now, OpTimeout: 5 * time.Second,
		Limits:  ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18},
		Observe: func(string, time.Duration, error) { calls.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	const n = 300
	until := time.Now().Add(time.Hour).Unix()
	qs := make([]cleanup, n)
	for i := range qs {
		k := ledger.Key{Sender: "did:example:parked", ID: [16]byte{0x31, byte(i >> 8), byte(i)}}
		qs[i] = cleanup{k: k, token: "lost." + itoa(int64(i)), entry: true, until: until}
	}
	qs[1].until = time.Now().Add(-time.Minute).Unix() // its message expired: dropped
	// The first Claim is applied late: its claim is in etcd, under a lease
	// (the node's session), with the value the clean-up looks for.
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	other := c.Client()
	defer other.Close()
	g, err := other.Grant(ctx, 600)
	if err != nil {
		t.Fatal(err)
	}
	applied := keysOf(s.prefix, qs[0].k).claim
	if _, err := other.Put(ctx, applied, qs[0].token, clientv3.WithLease(g.ID)); err != nil {
		t.Fatal(err)
	}
	cl := &s.cleaner
	cl.once.Do(func() {}) // no cleaner goroutine: the round below is the only one
	cl.mu.Lock()
	for _, q := range qs {
		cl.queue(q)
	}
	cl.mu.Unlock()
	before := calls.Load()
	if !cl.round() {
		t.Fatal("the round failed")
	}
	made := calls.Load() - before
	t.Logf("one round looking for %d lost claims: %d etcd requests", n, made)
	if most := int64((n+combineMaxOps-1)/combineMaxOps + 3); made > most {
		t.Fatalf("one round looking for %d lost claims made %d etcd requests, want at most %d "+
			"(one read of up to %d claim keys each, and the applied claim's undoing)", n, made, most, combineMaxOps)
	}
	if r, err := other.Get(ctx, applied); err != nil || len(r.Kvs) != 0 {
		t.Fatalf("the lost claim applied late was not undone: %v %v", r, err)
	}
	cl.mu.Lock()
	_, dropped := cl.parked[qs[1]]
	_, undone := cl.parked[qs[0]]
	left, queued := len(cl.parked), len(cl.q)
	cl.mu.Unlock()
	if dropped || undone || left != n-2 || queued != 0 {
		t.Fatalf("parked after the round: %d (expired one still parked: %v, undone one still parked: %v), want %d; "+
			"queued: %d, want 0 (FLEET-35)", left, dropped, undone, n-2, queued)
	}
}
