package etcdledger

import (
	"testing"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack (review 42 of cf82b42): "uncounted" lives only in this
// process's entryRef, never in the vanished charge a later remake takes
// off. Every unnamed caller shares the principal "*", so any sender keeps
// that principal's counter changing (other nodes' writes, on their own
// leases) while a victim's entry, gone with its bucket lease, is remade:
// after 16 changed counters the remake makes it uncounted (no charge on
// the counter). Its Finish then fails on etcd (the store error leaves the
// ticket open: Ticket.Finish may be called again), and the remade entry
// goes with its bucket lease in turn. The next Finish remakes it again
// with gone = the uncounted entry (ops.go remake: vanished{cost: old}),
// and vanished.takes takes that cost off the counter, which never held
// it (created before the uncounted entry, so "it still holds it"). Before
// (review 42): the principal's counter loses a whole charge that belongs to other
// callers' live entries: undercounted, its share admits that much more.
// Now: a remake of an uncounted entry takes nothing off (vanished cost
// 0), so the counter ends at what the
// others wrote plus the victim's done entry.
func TestRemakeOfUncountedEntryNeverTakesOthersChargeOff(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const sender = "did:example:remake-uncounted"
	k := ledger.Key{Sender: sender, ID: [16]byte{0x42, 0x10}}
	// The others keep writing through the remake, which makes the entry
	// uncounted; the Finish after it fails.
	s, key, _ := uncountedSetup(t, c, "/remake-uncounted/", k)
	s.mu.Lock()
	ref := s.running[k]
	s.mu.Unlock()
	revokeBucketLease(t, c, s, ref.e.end)
	if _, found, err := s.Lookup(k); err != nil || found {
		t.Fatalf("setup: the remade entry still there after its lease went: %v %v", found, err)
	}
	others, _, err := s.readCounter("test", key)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Finish(k, []byte("handler ran")); err != nil {
		t.Fatalf("the retried Finish: %v", err)
	}
	want := others + entryCost(k, int64(len("handler ran")))
	if n, _, err := s.readCounter("test", key); err != nil || n != want {
		t.Fatalf("the counter holds %d (%v), want %d (the others' %d and the done entry): %d of the others' charge "+
			"was taken off as the vanished charge of an entry that was never counted", n, err, want, others, want-n)
	}
}

// deletesKey reports whether tr's success branch, or that of a
// transaction nested in it (combined), deletes key.
func deletesKey(tr *pb.TxnRequest, key string) bool {
	for _, op := range tr.Success {
		if d := op.GetRequestDeleteRange(); d != nil && string(d.Key) == key {
			return true
		}
		if n := op.GetRequestTxn(); n != nil && deletesKey(n, key) {
			return true
		}
	}
	return false
}
