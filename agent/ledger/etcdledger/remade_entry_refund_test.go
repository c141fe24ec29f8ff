package etcdledger

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Threat (review: the refund of an entry whose cost changed, in both
// directions): a running entry that goes with its bucket lease while its
// handler runs is made again by Finish with the smallest reservation that
// holds the reply (remake: a smaller cost, often on another counter), and
// Finish then gives back what of that reservation the reply does not
// use. Its first try had guessed the vanished entry's counter from the
// principal's counters as this node last read them (another message of
// the principal written since, in another bucket: the vanished counter is
// not among them), read it, found it gone with the lease, and marked the
// refund unreadable; that mark outlived the remake, so the remade entry's
// unused reservation (MinReplyReserve less the reply) stayed on the
// principal's counter and the node's tally until its bucket ended, though
// the counter it sits on was just written by this node under the lock.
// Now (FLEET-25): the remade entry's refund starts afresh from the
// remake's own write; both the principal's counters and the node's tally
// hold exactly what is live: the recorded reply and the other running
// entry.
func TestRemadeEntryGivesBackItsUnusedReservation(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve = 8 << 10
	s := openStoreWithin(t, c, "/remade-refund/", 2*time.Second, ledger.Limits{Budget: 1 << 22, PerCaller: 1 << 20, ReplyReserve: reserve})
	const sender = "did:example:remade-refund"
	k, other := ledger.Key{Sender: sender, ID: [16]byte{0x25, 1}}, ledger.Key{Sender: sender, ID: [16]byte{0x25, 2}}
	exp := time.Now().Add(time.Hour)
	end := runEntry(t, s, k, exp)
	revokeBucketLease(t, c, s, end) // k's entry and its counter go, the handler runs on
	if e := runEntry(t, s, other, exp.Add(30*time.Minute)); e == end {
		t.Fatalf("setup: the other message fell in k's bucket %d", end)
	}
	reply := []byte("ok")
	if err := s.Finish(k, reply); err != nil {
		t.Fatalf("finish of the vanished entry: %v", err)
	}
	if rec, found, err := s.Lookup(k); err != nil || !found || string(rec.Reply) != string(reply) {
		t.Fatalf("setup: reply not recorded: %+v %v %v", rec, found, err)
	}
	snap, err := s.readUsage("test", usagePrefix(s.prefix, hash16(s.principalOf(sender))))
	if err != nil {
		t.Fatal(err)
	}
	want := entryCost(k, int64(len(reply))) + entryCost(other, reserve)
	if snap.sum != want || s.Usage().Bytes != want {
		t.Fatalf("the principal's counters %v sum to %d and the node's tally is %d, want %d (the reply's %d and the "+
			"running entry's %d): the remade entry kept its unused reservation",
			snap.vals, snap.sum, s.Usage().Bytes, want, entryCost(k, int64(len(reply))), entryCost(other, reserve))
	}
}
