package etcdledger_test

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack: a flood of messages the agent answers without running anything
// (PING, or requests its checks refuse), each with another ttl, so that
// each claim's charge lands in another expiry bucket. A refusal is
// documented to leave nothing (docs/FLEET.md: "its claim, its entry and
// its charge go in one transaction, and nothing of it stays"), but the
// undo writes the bucket's usage counter to "0" and keeps the key, under
// a lease that lasts until the message's expiry (up to MaxTTL, 7 days):
// at no cost to its share the attacker leaves one counter key per bucket
// (hundreds, FLEET-4's granules over 7 days), and every later transaction
// of its principal, which for did:key callers is the one they all share,
// compares that whole range and reads it back. Before FLEET-19: 40 refusals with 40
// ttls leave 40 keys. Now (FLEET-19): a counter that reaches 0 is
// deleted.
func TestRefusedFloodLeavesNoCounterKeys(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const prefix = "/zero/"
	s := openStore(t, c, prefix, ledger.Limits{})
	l := mustLedger(t, s, time.Now)
	now := time.Now()
	for i := 0; i < 40; i++ {
		exp := now.Add(time.Duration(10+i) * time.Second) // one bucket each (1 s granules under 64 s)
		st := startRetrying(t, l, "did:example:zero", [16]byte{0x20, byte(i)}, exp)
		if st.State != ledger.Fresh {
			t.Fatalf("start %d: %v", i, st.State)
		}
		st.Ticket.Abandon() // refused by its checks
	}
	if got := counterSum(t, c, prefix); got != 0 {
		t.Fatalf("counters sum to %d after refusals only, want 0", got)
	}
	if n := count(t, c.Client(), prefix); n != 0 {
		t.Fatalf("%d keys left under the prefix by 40 refused messages, want none: "+
			"each refusal keeps a zero usage counter in its own bucket, read back by every transaction of the principal", n)
	}
}

// Attack on the deletion above: a counter deleted (given back to 0 by
// another node) is invisible to the comparison on the principal's prefix
// (a key gone has no mod revision), so a node whose guess still holds the
// counter's old value would write that value plus its charge: a phantom
// charge on the principal's share (for did:key callers, the one they all
// share) until the bucket ends, repeatable by refusals on one node beside
// claims on another. Every charging transaction therefore compares the
// counter's own mod revision too (FLEET-19): the counters must hold
// exactly the one claim that stays.
func TestCounterDeletedUnderGuessNeverOvercharged(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const prefix = "/deleted-guess/"
	a, b := openStore(t, c, prefix, ledger.Limits{}), openStore(t, c, prefix, ledger.Limits{})
	const sender = "did:example:guess"
	exp := time.Now().Add(time.Minute) // one bucket for all
	key := func(i byte) ledger.Key { return ledger.Key{Sender: sender, ID: [16]byte{0x6d, i}} }
	claim := func(s *etcdledger.Store, k ledger.Key) {
		t.Helper()
		for deadline := time.Now().Add(etcdtest.Settle); ; time.Sleep(50 * time.Millisecond) {
			r, err := s.Claim(k, exp)
			if err == nil && !r.Found && r.Wait == nil {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("claim %x: %+v %v", k.ID[:2], r, err)
			}
		}
	}
	claim(b, key(1)) // B charges the counter
	claim(a, key(2)) // A charges it too, and learns it
	a.Unclaim(key(2))
	b.Unclaim(key(1)) // B gives it back to 0: deleted, under A's guess
	if n := count(t, c.Client(), prefix+"u/"); n != 0 {
		t.Fatalf("%d counters after every claim was given up, want none", n)
	}
	claim(a, key(3)) // on A's guess of the deleted counter
	defer a.Unclaim(key(3))
	want := 2*int64(len(sender)+17) + a.Limits().ReplyReserve + 96 // the one entry's cost
	if got := counterSum(t, c, prefix); got != want {
		t.Fatalf("counters %d after one claim, want %d: a phantom charge written from a guess of a deleted counter", got, want)
	}
}
