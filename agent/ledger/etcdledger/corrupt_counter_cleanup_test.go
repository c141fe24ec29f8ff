package etcdledger_test

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
)

// Attack surface: a usage counter another node (a bug) left corrupt
// (FLEET-9). The principal's share is then refused, fail closed. But a
// claim given up by a node whose undo failed once (etcd slow for one
// call) is handed to the cleaner, whose clean reads that counter to give
// the entry's charge back: the read refuses the counter as corrupt, clean
// fails, and is retried for as long as the node lives. Before FLEET-18, the given-up
// claim stays under the node's live session: every copy of the message on
// any node is Busy (a Raft write per WaitPoll each) until the message
// expires, and the cleaner's rounds stop at the failing cleanup, backing
// off to the session TTL for every other principal's given-up claims.
// Now (FLEET-18): a corrupt counter loses only its refund (the charge stays, as
// after 16 contended tries); the claim and its unrun entry are deleted.
func TestCorruptCounterNeverStrandsGivenUpClaim(t *testing.T) {
	c := etcdtest.Start(t, 3)
	const prefix = "/corrupt-clean/"
	a, fail := slowUndoStore(t, c, prefix, ledger.Limits{})
	b := openStore(t, c, prefix, ledger.Limits{})
	la, lb := mustLedger(t, a, time.Now), mustLedger(t, b, time.Now)
	const sender = "did:example:corrupt"
	id := [16]byte{0x9c}
	exp := time.Now().Add(time.Minute)
	st := startRetrying(t, la, sender, id, exp)
	if st.State != ledger.Fresh {
		t.Fatalf("A: %v, want fresh", st.State)
	}
	if n := corruptCounters(t, c, prefix); n == 0 {
		t.Fatal("no counter to corrupt: the claim made no entry")
	}
	fail.Store(1)
	st.Ticket.Abandon() // refused by its checks: nothing ran
	deadline := time.Now().Add(10 * time.Second)
	for {
		sb := startRetrying(t, lb, sender, id, exp)
		if sb.State != ledger.Busy {
			if sb.State != ledger.Fresh {
				t.Errorf("B after A gave the message up unrun: %v, want fresh", sb.State)
			}
			if sb.Ticket != nil {
				sb.Ticket.Abandon()
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("B still Busy 10 s after A gave the message up (A's queued cleanups: %d): "+
				"the clean-up of A's claim fails for ever on the corrupt counter's refund", a.Stats().Cleanups)
		}
		<-sb.Wait
	}
}
