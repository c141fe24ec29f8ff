package etcdledger

import (
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack (review 105, FLEET-22's state 3): clean, the undoing of a claim
// whose handler never ran (FLEET-7, FLEET-11), deletes the running entry
// made with or after the claim and gives its charge back. It told a
// running entry by its value's first two bytes (below runningBelow,
// "\x01\x02"), and a state-3 entry ("running, charged to no counter") is
// "\x01\x03…". Before (review 105): read as not running, it was kept
// while the claim went, so the key was left running without a claimer
// and every copy of the message answered "outcome unknown" (Lost) for a
// handler that never ran, until the entry expired. Now (FLEET-22,
// amended): it goes with the claim as a state-1 one does (runningValue),
// and, its cost being on no counter, nothing is taken off the counter
// (the others' charges stay whole). Only a peer that writes state 3
// under another node's claim (a buggy or hostile one) reaches it: a
// remake, the only writer of state 3, runs under a claim whose handler
// ran, which clean never undoes with its entry.
func TestCleanupDeletesUncountedEntryOfUnrunClaim(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const prefix = "/r105-clean-uncounted/"
	s := openStoreWithin(t, c, prefix, 2*time.Second, ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: 8 << 10})
	cli := c.Client()
	const others = 1 << 16 // the other callers' charges on the counter
	for i, tc := range []struct {
		name      string
		uncounted bool
	}{{"counted (state 1)", false}, {"uncounted (state 3)", true}} {
		t.Run(tc.name, func(t *testing.T) {
			k := ledger.Key{Sender: "did:example:clean-uncounted", ID: [16]byte{0x10, 0x05, byte(i)}}
			ks := keysOf(prefix, k)
			exp := time.Now().Add(time.Hour)
			e, cost, err := s.newEntry(k, time.Now(), exp, 8<<10, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.uncounted = tc.uncounted
			counter := usageKey(prefix, hexOf(e.principal), e.end)
			ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
			defer cancel()
			cr, err := cli.Put(ctx, ks.claim, "r105.1")
			if err != nil {
				t.Fatal(err)
			}
			want := int64(others)
			if !tc.uncounted {
				want += cost // its charge, given back by clean
			}
			if _, err := cli.Put(ctx, counter, itoa(want)); err != nil {
				t.Fatal(err)
			}
			if _, err := cli.Put(ctx, ks.entry, string(e.encode())); err != nil {
				t.Fatal(err)
			}
			if err := s.clean(cleanup{k: k, rev: cr.Header.Revision, entry: true}); err != nil {
				t.Fatalf("clean: %v", err)
			}
			if r, err := cli.Get(ctx, ks.claim); err != nil || len(r.Kvs) != 0 {
				t.Fatalf("the claim is still there (%v)", err)
			}
			if r, err := cli.Get(ctx, ks.entry); err != nil || len(r.Kvs) != 0 {
				t.Fatalf("the running entry of a claim whose handler never ran is kept without a claimer (%v): "+
					"every copy of the message is answered \"outcome unknown\" until it expires", err)
			}
			if n, _, err := s.readCounter("test", counter); err != nil || n != others {
				t.Fatalf("the counter holds %d (%v), want %d (the others' charges)", n, err, int64(others))
			}
		})
	}
}
