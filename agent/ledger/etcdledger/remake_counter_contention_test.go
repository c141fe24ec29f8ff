package etcdledger

import (
	"context"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: a running entry goes with its bucket lease while its handler
// runs, and other writers of the principal's counter (other nodes running
// messages of the same principal: every unnamed caller shares "*") change
// it without pause. Finish remakes the entry (ops.go remake), whose
// transaction compares on the counter's mod revision: before, every one
// of its 16 tries failed against another's write and Finish returned
// ledger_contended, so the reply of a handler that ran was never recorded
// and every retry was answered "outcome unknown". Now the last try makes
// the entry without its charge (the counter left as it is, FLEET-14's
// rule), and Finish takes no refund off a counter that never held it.
func TestRemakeNeverLosesReplyForCounterThatKeepsChanging(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve = 8 << 10
	const sender = "did:example:remake-contended"
	var counter atomic.Pointer[string]
	var writes atomic.Int64
	const base = 1 << 16 // the other writers' entries: enough for any refund
	// Another node writes the counter after each of the remake's reads,
	// before its transaction (Observe runs as each etcd call returns).
	observe := func(op string, _ time.Duration, _ error) {
		if key := counter.Load(); key != nil && op == "mark" {
			ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
			defer cancel()
			if _, err := c.Client().Put(ctx, *key, strconv.FormatInt(base+writes.Add(1), 10)); err != nil {
				t.Error(err)
			}
		}
	}
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/remake-contended/", Now: time.Now, OpTimeout: time.Second,
		Observe: observe, Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: reserve}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	k := ledger.Key{Sender: sender, ID: [16]byte{0x35, 4}}
	end := runEntry(t, s, k, time.Now().Add(time.Hour))
	revokeBucketLease(t, c, s, end)
	if _, found, err := s.Lookup(k); err != nil || found {
		t.Fatalf("setup: entry still there after its lease went: %v %v", found, err)
	}
	key := usageKey(s.prefix, hash16(s.principalOf(sender)), end)
	counter.Store(&key)
	ferr := s.Finish(k, []byte("handler ran"))
	counter.Store(nil)
	rec, found, lerr := s.Lookup(k)
	if ferr != nil || lerr != nil || !found || string(rec.Reply) != "handler ran" {
		t.Fatalf("the handler ran but its reply was not recorded (Finish: %v, %s; lookup: found %v, %v): "+
			"the remake of the vanished entry gave up on a counter others kept changing (%d writes), so "+
			"every retry is answered outcome_unknown", ferr, amp.NameOf(ferr), found, lerr, writes.Load())
	}
	// The entry was made without its charge: nothing of it, and so no
	// refund, was taken off the counter the others wrote last.
	if n, _, err := s.readCounter("test", key); err != nil || n != base+writes.Load() {
		t.Fatalf("the counter holds %d (%v), want the others' last write %d: a refund came off a counter "+
			"that never held the remade entry's charge", n, err, base+writes.Load())
	}
}
