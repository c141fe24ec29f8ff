package etcdledger

import (
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: a running entry goes with its bucket lease while its handler
// runs, and one of the principal's usage counters holds a value that does
// not decode (FLEET-9: a bug in another node, a writer under the prefix):
// another bucket's (a sibling), or the very counter the remade entry is
// charged to. Finish remakes the entry (ops.go remake). Before, the remake
// read all the principal's counters (readUsage) and returned the corrupt
// one's error: the reply of a handler that ran was never recorded and
// every retry was answered "outcome unknown", against FLEET-14/FLEET-18 (a
// counter that cannot be read loses only the refund, never the reply).
// Now the remake reads only the two counters it writes, and one that does
// not decode is left as it is: the reply is recorded, the corrupt counter
// kept (it still refuses the principal's new entries, failing closed).
func TestRemakeNeverLosesReplyForCorruptCounter(t *testing.T) {
	for _, tc := range []struct {
		name    string
		sibling bool // another bucket's counter, not the remade entry's
	}{
		{"sibling bucket", true},
		{"its own bucket", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := etcdtest.Start(t, 1)
			const reserve, op = 8 << 10, 500 * time.Millisecond
			const sender = "did:example:remake-corrupt"
			s := openStoreWithin(t, c, "/remake-corrupt/", op, ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: reserve})
			k := ledger.Key{Sender: sender, ID: [16]byte{0x35, 1}}
			end := runEntry(t, s, k, time.Now().Add(time.Hour))
			revokeBucketLease(t, c, s, end)
			if _, found, err := s.Lookup(k); err != nil || found {
				t.Fatalf("setup: entry still there after its lease went: %v %v", found, err)
			}
			bad := end
			if tc.sibling {
				bad = end + 1<<20
			}
			corrupt := usageKey(s.prefix, hash16(s.principalOf(sender)), bad)
			ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
			defer cancel()
			if _, err := c.Client().Put(ctx, corrupt, "garbage"); err != nil {
				t.Fatal(err)
			}
			ferr := s.Finish(k, []byte("handler ran"))
			rec, found, lerr := s.Lookup(k)
			if ferr != nil || lerr != nil || !found || string(rec.Reply) != "handler ran" {
				t.Fatalf("the handler ran but its reply was not recorded (Finish: %v, %s; lookup: found %v, %v): "+
					"the remake of the vanished entry failed on a corrupt counter, so every retry is "+
					"answered outcome_unknown", ferr, amp.NameOf(ferr), found, lerr)
			}
			r, err := c.Client().Get(ctx, keysOf(s.prefix, k).entry)
			if err != nil || len(r.Kvs) != 1 {
				t.Fatalf("remade entry: %v %v", r, err)
			}
			if e, err := decodeEntry(r.Kvs[0].Value); err != nil || !tc.sibling && e.end != end {
				t.Skipf("setup: the remade entry fell in bucket %d, not %d (%v)", e.end, end, err)
			}
			// The corrupt counter is left as it is, never overwritten with
			// a smaller count that would let the principal past its share.
			if r, err := c.Client().Get(ctx, corrupt); err != nil || len(r.Kvs) != 1 || string(r.Kvs[0].Value) != "garbage" {
				t.Fatalf("the corrupt counter was rewritten by the remake: %v %v", r, err)
			}
		})
	}
}
