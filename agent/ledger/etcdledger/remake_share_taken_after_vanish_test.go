package etcdledger

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: every caller the policy does not name shares one principal
// ("*"). A victim's running entry goes with its bucket lease while its
// handler runs (lease churn, a clock that jumped, a restored cluster);
// its usage counter goes with it, so the share the entry held is free in
// etcd. Another unnamed caller (the attacker) fills that shared share
// with its own messages before the victim's handler finishes. Before, the
// victim's Finish remade the entry (ops.go remake) with markNew's share
// check and was refused caller_quota_exceeded: the reply of a handler
// that ran was never recorded, and every retry of the victim's message
// was answered "outcome unknown", by another caller's choice. Now a
// remake, admitted once and costing no more than the vanished entry, is
// not checked against the share (at most one charge over per claim,
// until its bucket ends); its charge is still added to the counter.
func TestRemakeNeverRefusedForShareAnotherCallerTookAfterVanish(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve, op = 8 << 10, 500 * time.Millisecond
	const victim, attacker = "did:example:remake-victim", "did:example:remake-attacker"
	k := ledger.Key{Sender: victim, ID: [16]byte{0x35, 2}}
	// Three of the attacker's entries and less than the remade entry.
	ka0 := ledger.Key{Sender: attacker}
	share := 3*entryCost(ka0, reserve) + entryCost(k, ledger.MinReplyReserve) - 1
	s := openStoreWithin(t, c, "/remake-share-taken/", op, ledger.Limits{Budget: 1 << 24, PerCaller: share, ReplyReserve: reserve})
	s.SetPrincipal(func(string) string { return "*" }) // the policy names neither
	exp := time.Now().Add(time.Hour)
	end := runEntry(t, s, k, exp)
	revokeBucketLease(t, c, s, end)
	if _, found, err := s.Lookup(k); err != nil || found {
		t.Fatalf("setup: entry still there after its lease went: %v %v", found, err)
	}
	// The attacker fills the shared principal's share, now free in etcd.
	filled := 0
	for i := 0; i < 64; i++ {
		ka := ledger.Key{Sender: attacker, ID: [16]byte{0x35, 3, byte(i)}}
		var r ledger.ClaimResult
		var err error
		for dl := time.Now().Add(etcdtest.Settle); ; time.Sleep(20 * time.Millisecond) {
			if r, err = s.Claim(ka, exp); err == nil || time.Now().After(dl) {
				break
			}
		}
		if err != nil || r.Found || r.Wait != nil {
			t.Fatalf("attacker's claim %d: %+v %v", i, r, err)
		}
		if err := s.MarkRunning(ka, exp); err != nil {
			if amp.NameOf(err) != ledger.ErrCallerFull {
				t.Fatalf("attacker's running %d: %v", i, err)
			}
			break
		}
		filled++
	}
	if filled == 0 {
		t.Fatal("setup: the attacker ran nothing")
	}
	counter := usageKey(s.prefix, hash16("*"), end)
	before, _, err := s.readCounter("test", counter)
	if err != nil {
		t.Fatal(err)
	}
	ferr := s.Finish(k, []byte("handler ran"))
	rec, found, lerr := s.Lookup(k)
	if ferr != nil || lerr != nil || !found || string(rec.Reply) != "handler ran" {
		t.Fatalf("the victim's handler ran but its reply was not recorded (Finish: %v, %s; lookup: found %v, %v) "+
			"after another caller of the shared principal took the share its vanished entry held (%d entries): "+
			"every retry is answered outcome_unknown", ferr, amp.NameOf(ferr), found, lerr, filled)
	}
	// The remade entry is charged all the same: what its recorded reply
	// costs is on the counter, over the share by at most that one charge.
	want := before + entryCost(k, int64(len("handler ran")))
	if n, _, err := s.readCounter("test", counter); err != nil || n != want {
		t.Fatalf("after the remake the counter holds %d bytes (%v), want %d (the attacker's %d and the victim's reply)",
			n, err, want, before)
	}
}
