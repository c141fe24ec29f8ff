package etcdledger

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: the running entry of a message vanishes while its handler runs
// (its bucket lease expired or was revoked: lease churn, a clock that
// jumped, a restored cluster) and the handler ends while its principal's
// queue is longer than OpTimeout. Before: Finish went lockless
// (FLEET-20), found the entry missing and answered ledger_ticket_used;
// Ticket.Finish (agent/ledger/ledger.go) then recorded the reply again,
// marking the entry running anew — and that markNew (ops.go) waited for
// the same principal's lock and was refused ledger_contended at its
// deadline: the handler ran, its reply went out unrecorded and every
// retry was answered "outcome unknown", the loss FLEET-20 removed, back
// through the re-mark. Now: a Finish is never refused for its principal's
// queue — while this node's claim holds, Finish itself makes the entry
// again, done, without the principal's lock (ops.go remake: the counters
// read, the reply's cost charged, nothing left to refund).
func TestFinishOfVanishedEntryNeverRefusedForQueue(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const op = 500 * time.Millisecond
	const sender = "did:example:churned-caller"
	s := openStoreWithin(t, c, "/vanished-finish/", op, ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: 4 << 10})
	l, err := ledger.New(s, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour)
	id := [16]byte{0x22, 2}
	st, err := l.Start(sender, id, exp)
	if err != nil || st.State != ledger.Fresh || st.Ticket == nil {
		t.Fatalf("start: %+v %v", st, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatalf("running: %v", err)
	}
	// The bucket lease goes (expired, revoked): the entry and its counter
	// with it; the session lease, and so the claim, stay.
	end := bucketEnd(time.Now(), exp)
	s.leases.mu.Lock()
	lease, ok := s.leases.m[end]
	s.leases.mu.Unlock()
	if !ok {
		t.Fatal("setup: no bucket lease cached")
	}
	ctx, cancel := context.WithTimeout(context.Background(), etcdtest.Settle)
	defer cancel()
	if _, err := c.Client().Revoke(ctx, lease); err != nil {
		t.Fatal(err)
	}
	k := ledger.Key{Sender: sender, ID: id}
	if r, err := c.Client().Get(ctx, keysOf(s.prefix, k).entry, clientv3.WithCountOnly()); err != nil || r.Count != 0 {
		t.Fatalf("setup: entry still there after its lease went: %v %v", r, err)
	}
	unlock := holdPrincipalQueue(t, s, sender)
	ferr := st.Ticket.Finish([]byte("handler ran"))
	unlock()
	rec, found, lerr := s.Lookup(k)
	if ferr != nil || lerr != nil || !found || string(rec.Reply) != "handler ran" {
		t.Fatalf("the handler ran but its reply was not recorded (Finish: %v, %s; lookup: %+v %v %v): the "+
			"re-mark of the vanished entry waited for the principal's queue and was refused, so every retry "+
			"is answered outcome_unknown", ferr, amp.NameOf(ferr), rec, found, lerr)
	}
	// A retry of the message, on this node or another, is answered the
	// reply (a done entry: written twice, as every done entry is).
	other := openStoreWithin(t, c, s.prefix, op, ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18, ReplyReserve: 4 << 10})
	for _, n := range []*Store{s, other} {
		if r, err := n.Claim(k, exp); err != nil || !r.Found || string(r.Record.Reply) != "handler ran" {
			t.Fatalf("a retry after the entry was made again: %+v %v (%s)", r, err, amp.NameOf(err))
		}
	}
}
