package etcdledger

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Threat (clock step): the node's budget tally (docs/FLEET.md: Budget
// counts the entries this process wrote) dropped a bucket once the wall
// clock read past its end plus MaxClockSkew, while etcd deletes the
// bucket's entries when their lease ends, counted in seconds from the
// grant, whatever any wall clock says. One step of the wall clock
// forward (an NTP step, an RTC off by hours), even one corrected a
// moment later, emptied the tally of entries etcd still held for hours
// or days: the node then wrote a whole Budget more beside them, and
// again at each step, toward etcd's backend quota, which stops every
// node's writes when reached. Here the budget holds one entry; after a
// two-hour step forward and back, a second one was written beside the
// first, still in etcd. Now (FLEET-27) a bucket leaves the tally only
// once its lease's time has also elapsed on the clock that is never
// stepped.
func TestBudgetTallyKeepsEntriesAcrossAClockStepForward(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var step atomic.Int64 // how far the node's wall clock is off, ns
	now := func() time.Time { return time.Now().Add(time.Duration(step.Load())) }
	// Two senders, each its own share: only the node's budget refuses.
	first, second := ledger.Key{Sender: "did:example:tally-step-1", ID: [16]byte{0x27, 1}},
		ledger.Key{Sender: "did:example:tally-step-2", ID: [16]byte{0x27, 2}}
	cost := entryCost(first, ledger.MinReplyReserve)
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/tally-step/", Now: now,
		Limits: ledger.Limits{Budget: cost * 3 / 2, PerCaller: cost * 3 / 2, ReplyReserve: ledger.MinReplyReserve}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	exp := time.Now().Add(time.Hour)
	runEntry(t, s, first, exp)
	step.Store(int64(2 * time.Hour)) // the clock steps forward
	if _, err := s.Sweep(now(), 0); err != nil {
		t.Fatal(err)
	}
	step.Store(0) // and is corrected
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	if g, err := c.Client().Get(ctx, keysOf(s.prefix, first).entry); err != nil || len(g.Kvs) != 1 {
		t.Fatalf("setup: the first entry is not in etcd: %v %v", g, err)
	}
	if u := s.Usage(); u.Entries != 1 || u.Bytes != cost {
		t.Errorf("usage after the step: %+v, want the first entry's %d bytes (etcd still holds it)", u, cost)
	}
	r, err := s.Claim(second, exp)
	if err != nil || r.Found || r.Wait != nil {
		t.Fatalf("claim: %+v %v", r, err)
	}
	err = s.MarkRunning(second, exp)
	if amp.NameOf(err) != ledger.ErrFull {
		t.Fatalf("a second entry beside the first, over a budget of one: %v (%s), want %s", err, amp.NameOf(err), ledger.ErrFull)
	}
	s.Unclaim(second)
}
