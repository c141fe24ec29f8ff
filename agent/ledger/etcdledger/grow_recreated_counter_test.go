package etcdledger

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack (review 97): a counter lives on its last writer's bucket lease,
// so it can go (another node's lease revoked or lost, the class of
// FLEET-20's "lease loss") while a running entry it counted lives on,
// and be made again under the same key by the next charge of the
// principal's bucket. Every refund compares the counter's create
// revision since review 29 (chargedTo: never off a counter made since
// the entry was charged), but grow, which moves a running entry's charge
// to its larger reservation (a capability whose largest result is above
// the default), takes the entry's old cost off whatever counter has the
// key, compared on its mod revision only. Before (review 97): the new
// counter, which holds only the other message's charge, lost the grown
// entry's old cost as well: the principal's counters ended that much
// below the truth, and its share admitted that much more fleet-wide.
// Now (FLEET-23): the old cost is taken only off the counter that holds
// it (made at or before the entry's charge, vanished.takes); a counter
// made since gets the grown entry's new cost added, nothing taken off.
func TestGrowNeverTakesOldCostOffRecreatedCounter(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const prefix = "/r97-grow/"
	a := openStoreWithin(t, c, prefix, 2*time.Second, ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: 8 << 10})
	k := ledger.Key{Sender: "did:example:grow-recreated", ID: [16]byte{0x97, 0x04}}
	exp := time.Now().Add(time.Hour)
	if r, err := a.Claim(k, exp); err != nil || r.Found || r.Wait != nil {
		t.Fatalf("claim: %+v %v", r, err)
	}
	a.mu.Lock()
	ce := a.claims[k].entry
	a.mu.Unlock()
	if ce == nil {
		t.Fatal("setup: the claim made no entry")
	}
	// Another node's charge of the bucket puts the counter on its own
	// lease, which then goes: the counter with it, the entry stays.
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	cli := c.Client()
	other, err := cli.Grant(ctx, 3600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, ce.counter, itoa(2*ce.cost), clientv3.WithLease(other.ID)); err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Revoke(ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	// The next charge of the bucket (another message, another node) makes
	// it again: it holds that message's charge alone.
	others := 3 * ce.cost
	next, err := cli.Grant(ctx, 3600) // that node's lease of the bucket (FLEET-33)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cli.Put(ctx, ce.counter, itoa(others), clientv3.WithLease(next.ID)); err != nil {
		t.Fatal(err)
	}
	if _, found, err := a.Lookup(k); err != nil || !found {
		t.Fatalf("setup: the running entry went with the counter: %v %v", found, err)
	}
	const grown = 64 << 10
	if err := a.MarkRunningWithin(k, exp, grown); err != nil {
		t.Fatalf("running with a larger reservation: %v", err)
	}
	want := others + entryCost(k, grown)
	if n, _, err := a.readCounter("test", ce.counter); err != nil || n != want {
		t.Fatalf("the counter holds %d (%v), want %d (the other message's %d and the grown entry's %d): "+
			"%d of the other's charge was taken off as the grown entry's old cost, which went with the old counter",
			n, err, want, others, entryCost(k, grown), want-n)
	}
}
