package etcdledger

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: two nodes charge one principal's counter of one bucket; each
// charge puts the counter under the writer's own bucket lease, so the
// counter lives on the last writer's lease (node B) while node A's entry
// lives on A's. A's lease goes while A's handler runs (revoked, or its
// TTL, counted by A's clock, ran out first): A's entry vanishes, the
// counter — still holding A's charge — stays. A's Finish remakes the entry
// (ops.go remake → makeEntry). Before, its share check counted the
// vanished entry's charge beside the remade one, and nothing ever took it
// off (the entry it stood for is gone): a principal whose share held A's
// and B's entries refused A's remake caller_quota_exceeded for a share its
// own vanished entry filled; the handler ran, its reply was not recorded,
// every retry was answered "outcome unknown". Now: the remake leaves the
// vanished charge out of the share check and takes it off the counter in
// its transaction (compared on the counter's mod revision, only on the
// counter made by the time the entry was charged).
func TestRemakeNeverRefusedForVanishedEntrysChargeOnAnotherNodesCounter(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve, op = 8 << 10, 500 * time.Millisecond
	const sender = "did:example:remake-share"
	ka := ledger.Key{Sender: sender, ID: [16]byte{0x29, 5}}
	kb := ledger.Key{Sender: sender, ID: [16]byte{0x29, 6}}
	share := 2*entryCost(ka, reserve) + entryCost(ka, ledger.MinReplyReserve) - 1
	lim := ledger.Limits{Budget: 1 << 20, PerCaller: share, ReplyReserve: reserve}
	a := openStoreWithin(t, c, "/remake-share/", op, lim)
	b := openStoreWithin(t, c, a.prefix, op, lim)
	l, err := ledger.New(a, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour)
	st, err := l.Start(sender, ka.ID, exp)
	if err != nil || st.State != ledger.Fresh || st.Ticket == nil {
		t.Fatalf("start on A: %+v %v", st, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatalf("running on A: %v", err)
	}
	a.mu.Lock()
	end := a.running[ka].e.end
	a.mu.Unlock()
	// Node B runs another message of the principal, same bucket: the
	// counter now lives on B's lease.
	endB := runEntry(t, b, kb, exp)
	if endB != end {
		t.Skipf("setup: B's entry fell in bucket %d, not %d", endB, end)
	}
	counter := usageKey(a.prefix, hash16(a.principalOf(sender)), end)
	revokeBucketLease(t, c, a, end) // A's lease only
	if _, found, err := a.Lookup(ka); err != nil || found {
		t.Fatalf("setup: A's entry still there after its lease went: %v %v", found, err)
	}
	if n, rev, err := a.readCounter("test", counter); err != nil || rev == 0 || n != 2*entryCost(ka, reserve) {
		t.Fatalf("setup: counter %d rev %d (%v): want A's and B's charges on B's lease", n, rev, err)
	}
	ferr := st.Ticket.Finish([]byte("handler ran"))
	rec, found, lerr := a.Lookup(ka)
	if ferr != nil || lerr != nil || !found || string(rec.Reply) != "handler ran" {
		t.Fatalf("the handler ran but its reply was not recorded (Finish: %v, %s; lookup: %+v %v %v): the "+
			"remake's share check counted the vanished entry's charge, left on the counter that lives on "+
			"another node's lease", ferr, amp.NameOf(ferr), rec, found, lerr)
	}
	// The vanished entry's charge left the counter with the remake: it
	// holds B's running entry and A's recorded reply, nothing more.
	want := entryCost(kb, reserve) + entryCost(ka, int64(len("handler ran")))
	if n, _, err := a.readCounter("test", counter); err != nil || n != want {
		t.Fatalf("after the remake the counter holds %d bytes (%v), want %d: the vanished entry's charge stayed "+
			"on the principal's share", n, err, want)
	}
}
