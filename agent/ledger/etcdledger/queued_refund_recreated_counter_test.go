package etcdledger

import (
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// revokeBucketLease revokes the bucket lease s cached for end: etcd
// deletes every entry and counter under it (lease churn, a clock that
// jumped, a restored cluster), as vanished_entry_finish_test.go does.
func revokeBucketLease(t *testing.T, c *etcdtest.Cluster, s *Store, end int64) {
	t.Helper()
	s.leases.mu.Lock()
	lease, ok := s.leases.m[end]
	s.leases.mu.Unlock()
	if !ok {
		t.Fatal("setup: no bucket lease cached")
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	if _, err := c.Client().Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
}

// Attack: a Finish behind its principal's queue records the reply without
// the lock and queues the refund of the unused reservation on the cleaner
// (ops.go refundLater). The queued refund named only the counter's key and
// an amount: cleanRefund (cleanup.go) read whatever counter had that key
// when the cleaner got to it and took the amount off, compared only on
// the counter's mod revision of that read. The cleaner gets to it late
// whenever etcd failed lately (its backoff, up to SessionTTL) or its queue
// is long (up to 32768 refunds, one by one); the test holds the key busy
// as that delay. Meanwhile the bucket lease went (the done entry and the
// counter with it) and another message of the same principal charged a new
// counter under the same key (same bucket). Before, the late refund was
// taken off that NEW counter: the new running entry's charge dropped from
// ~8.3 KiB to a few hundred bytes (or to a deleted counter), so the
// principal's share admitted more running entries than PerCaller allows
// (the quota grew with every such refund). Now: the refund records the
// revision at which the entry was charged and is taken only off a counter
// created by then (compared on its create revision in the transaction),
// and never below what the done entry still costs; else it is dropped.
func TestQueuedRefundNeverTakenOffRecreatedCounter(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve, op = 8 << 10, 500 * time.Millisecond
	const sender = "did:example:late-refund"
	s := openStoreWithin(t, c, "/late-refund/", op, ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: reserve})
	exp := time.Now().Add(time.Hour)
	k1 := ledger.Key{Sender: sender, ID: [16]byte{0x29, 0x11}}
	k2 := ledger.Key{Sender: sender, ID: [16]byte{0x29, 0x12}}
	end := runEntry(t, s, k1, exp)
	// The cleaner does not reach k1's refund yet (its backoff, its queue).
	s.cleaner.unclaiming(k1, 1)
	released := false
	release := func() {
		if !released {
			released = true
			s.cleaner.unclaiming(k1, -1)
		}
	}
	defer release()
	unlock := holdPrincipalQueue(t, s, sender)
	ferr := s.Finish(k1, []byte("ok"))
	unlock()
	if ferr != nil {
		t.Fatalf("lockless finish: %v", ferr)
	}
	s.cleaner.mu.Lock()
	queued := len(s.cleaner.q)
	s.cleaner.mu.Unlock()
	if n := queued; n != 1 {
		t.Fatalf("setup: %d cleanups queued after a lockless Finish, want its refund", n)
	}
	// The bucket lease goes: the done entry and the counter with it.
	revokeBucketLease(t, c, s, end)
	counter := usageKey(s.prefix, hash16(s.principalOf(sender)), end)
	if _, rev, err := s.readCounter("test", counter); err != nil || rev != 0 {
		t.Fatalf("setup: counter still there after its lease went: rev %d %v", rev, err)
	}
	// Another message of the principal, same bucket: a new counter.
	if e2 := runEntry(t, s, k2, exp); e2 != end {
		t.Skipf("setup: the second message fell in bucket %d, not %d", e2, end)
	}
	charged := entryCost(k2, reserve)
	if n, _, err := s.readCounter("test", counter); err != nil || n != charged {
		t.Fatalf("setup: new counter %d (%v), want the running entry's %d", n, err, charged)
	}
	release() // the cleaner reaches the refund
	for dl := time.Now().Add(refundSettle); s.Stats().Cleanups != 0; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(dl) {
			t.Fatalf("the queued refund did not run within %v", refundSettle)
		}
	}
	n, rev, err := s.readCounter("test", counter)
	if err != nil {
		t.Fatal(err)
	}
	if n < charged {
		t.Fatalf("the refund of a Finish recorded before the counter was recreated was taken off the NEW counter: "+
			"it holds %d bytes (rev %d) while the running entry it counts costs %d; the principal's share now "+
			"admits %d bytes more than PerCaller allows", n, rev, charged, charged-n)
	}
}
