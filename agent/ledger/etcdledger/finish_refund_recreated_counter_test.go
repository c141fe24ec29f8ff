package etcdledger

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack: the counter of a principal's bucket lives on the lease of its
// last writer (node B), the running entry of node A's message on A's. B's
// lease goes (revoked, or its TTL, counted by B's clock, ran out first):
// the counter goes with it, holding A's charge, while A's entry stays.
// Another message of the principal, same bucket, makes the counter again
// under the same key with its own charge. Before, A's Finish (with the
// principal's lock, as usual) read whatever counter had that key and took
// A's unused reservation off it: the new counter, which never held A's
// charge, dropped from ~8.3 KiB to a few hundred bytes, and the
// principal's share admitted that much more than PerCaller. Now: Finish
// takes the refund only off a counter created by the time the entry was
// charged (compared on its create revision in the transaction), and never
// below what the done entry still costs; else the refund is left out.
func TestFinishRefundNeverTakenOffRecreatedCounter(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve, op = 8 << 10, 500 * time.Millisecond
	const sender = "did:example:recreated-counter"
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: reserve}
	a := openStoreWithin(t, c, "/recreated-counter/", op, lim)
	b := openStoreWithin(t, c, a.prefix, op, lim)
	exp := time.Now().Add(time.Hour)
	key := func(i byte) ledger.Key { return ledger.Key{Sender: sender, ID: [16]byte{0x29, 0x20, i}} }
	ka, kb, kc := key(1), key(2), key(3)
	run := func(s *Store, k ledger.Key) int64 { return runEntry(t, s, k, exp) }
	end := run(a, ka)
	if e := run(b, kb); e != end { // the counter now lives on B's lease
		t.Skipf("setup: B's entry fell in bucket %d, not %d", e, end)
	}
	revokeBucketLease(t, c, b, end) // B's lease only: A's entry stays
	counter := usageKey(a.prefix, hash16(a.principalOf(sender)), end)
	if _, rev, err := a.readCounter("test", counter); err != nil || rev != 0 {
		t.Fatalf("setup: counter still there after its lease went: rev %d %v", rev, err)
	}
	if kv, err := a.getKey("test", keysOf(a.prefix, ka).entry); err != nil || kv == nil {
		t.Fatalf("setup: A's entry went with B's lease: %v %v", kv, err)
	}
	if e := run(b, kc); e != end {
		t.Skipf("setup: the third entry fell in bucket %d, not %d", e, end)
	}
	charged := entryCost(kc, reserve)
	if n, _, err := a.readCounter("test", counter); err != nil || n != charged {
		t.Fatalf("setup: new counter %d (%v), want the running entry's %d", n, err, charged)
	}
	if err := a.Finish(ka, []byte("ok")); err != nil {
		t.Fatalf("finish: %v", err)
	}
	if rec, found, err := a.Lookup(ka); err != nil || !found || string(rec.Reply) != "ok" {
		t.Fatalf("setup: reply not recorded: %+v %v %v", rec, found, err)
	}
	if n, rev, err := a.readCounter("test", counter); err != nil || n != charged {
		t.Fatalf("A's Finish took its refund off a counter made again after A's entry was charged: it holds %d "+
			"bytes (rev %d, %v) while the running entry it counts costs %d", n, rev, err, charged)
	}
}

// runEntry claims k on s (retried while the store's bucket lease is made
// again after a revoke) and marks it running until exp, returning the
// end of its bucket.
func runEntry(t *testing.T, s *Store, k ledger.Key, exp time.Time) int64 {
	t.Helper()
	var r ledger.ClaimResult
	var err error
	for dl := time.Now().Add(etcdtest.Settle); ; time.Sleep(20 * time.Millisecond) {
		if r, err = s.Claim(k, exp); err == nil || time.Now().After(dl) {
			break
		}
	}
	if err != nil || r.Found || r.Wait != nil {
		t.Fatalf("claim: %+v %v", r, err)
	}
	if err := s.MarkRunning(k, exp); err != nil {
		t.Fatalf("running: %v", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.running[k].e.end
}
