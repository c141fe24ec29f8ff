package etcdledger

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// refundSettle bounds the wait for the refund the cleaner gives back
// after a lockless Finish returns: the package's bound on every wait for
// the cluster (the loop ends as soon as it is given back).
const refundSettle = etcdtest.Settle

// openStoreWithin opens a Store on c under prefix, with OpTimeout op.
func openStoreWithin(t *testing.T, c *etcdtest.Cluster, prefix string, op time.Duration, lim ledger.Limits) *Store {
	t.Helper()
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: prefix, Now: time.Now, OpTimeout: op, Limits: lim})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// holdPrincipalQueue holds the lock of sender's principal on s, as a queue of
// that principal's transactions ahead does (FLEET-20's test makes that
// queue with slow commits; here it is held for certain), until the
// returned function is called.
func holdPrincipalQueue(t *testing.T, s *Store, sender string) func() {
	t.Helper()
	pl, err := s.hot.lock(usagePrefix(s.prefix, hash16(s.principalOf(sender))), time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	return func() { s.hot.unlock(pl) }
}

// Attack: every caller the policy does not name shares one principal
// ("*"), so one of them can keep that principal's lock queue longer than
// OpTimeout (a flood of its own claims, or simply etcd committing slowly,
// as in FLEET-20's test). Each honest Finish of "*" behind that queue
// records its reply without the lock (ops.go Finish, FLEET-20). Before,
// nothing ever gave the unused reservation back: a 2-byte reply kept the
// whole ReplyReserve (256 KiB by default) on the principal's counter and
// on the node's budget tally until its expiry bucket ended — the
// message's ttl plus MaxClockSkew, up to days; after two such Finishes of
// 2-byte replies, a share sized for two and a half running entries
// refused the message of a third unnamed caller (caller_quota_exceeded)
// although etcd held two tiny replies (128 lockless Finishes pinned a
// default 32 MiB share, eight such principals the node's whole Budget).
// Now: the unused reservation is given back by the cleaner (a refund
// queued like a clean-up, compared on the counter's mod revision, without
// the lock, and the tally given back with it), so the share and the
// budget hold what the recorded replies use.
//
// Load (review): the Finish behind the held lock waits lockWait for it,
// as it waits OpTimeout in production; every etcd call keeps
// loadedOpTimeout, so a healthy cluster on a loaded machine (-race,
// other jobs) never hits a deadline (before, both were 500 ms and a
// Claim or a Finish was refused so). What is asserted is unchanged:
// counts of bytes on the counters and in the tally, and the third
// message's outcome.
func TestLocklessFinishNeverPinsCallerShare(t *testing.T) {
	c := etcdtest.Start(t, 1)
	const reserve, lockWait = 8 << 10, 500 * time.Millisecond
	// Three unnamed callers, one principal: two honest ones whose handlers
	// end behind the queue, and a third that comes later.
	key := func(i byte) ledger.Key {
		return ledger.Key{Sender: "did:example:unnamed-" + string('a'+rune(i)), ID: [16]byte{0x22, 1, i}}
	}
	cost := entryCost(key(0), reserve)
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/lockless-pin/", Now: time.Now, OpTimeout: loadedOpTimeout, lockWait: lockWait,
		Limits: ledger.Limits{Budget: 1 << 20, PerCaller: 2*cost + cost/2, ReplyReserve: reserve}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	s.SetPrincipal(func(string) string { return "*" }) // the policy names none of them
	exp := time.Now().Add(time.Hour)
	reply := []byte("ok")
	for i := range byte(2) {
		k := key(i)
		if r, err := s.Claim(k, exp); err != nil || r.Found || r.Wait != nil {
			t.Fatalf("claim %d: %+v %v", i, r, err)
		}
		if err := s.MarkRunning(k, exp); err != nil {
			t.Fatalf("running %d: %v", i, err)
		}
		// The lock is held for the whole Finish: one that returns did so
		// without it.
		unlock := holdPrincipalQueue(t, s, k.Sender)
		err := s.Finish(k, reply)
		unlock()
		if err != nil {
			t.Fatalf("finish %d behind the queue: %v (FLEET-20: never refused for the queue)", i, err)
		}
		if rec, ok, err := s.Lookup(k); err != nil || !ok || string(rec.Reply) != string(reply) {
			t.Fatalf("setup: reply %d not recorded: %+v %v %v", i, rec, ok, err)
		}
	}
	want := 2 * entryCost(key(0), int64(len(reply))) // what the two recorded replies use
	u := usagePrefix(s.prefix, hash16("*"))
	var sum, tally int64
	for dl := time.Now().Add(refundSettle); ; time.Sleep(50 * time.Millisecond) {
		snap, err := s.readUsage("test", u)
		if err != nil {
			t.Fatal(err)
		}
		sum, tally = snap.sum, s.Usage().Bytes
		if sum <= want && tally <= want || time.Now().After(dl) {
			break
		}
	}
	third := key(2)
	r, cerr := s.Claim(third, exp)
	merr := s.MarkRunning(third, exp)
	if sum > want || tally > want || cerr != nil || r.Found || r.Wait != nil || merr != nil {
		t.Fatalf("after two Finishes of %d-byte replies behind the shared principal's queue, its counters hold %d bytes and "+
			"the node's tally %d (the replies use %d; each Finish kept its %d-byte reservation, given back only when "+
			"the bucket ends); another unnamed caller's message: claim %+v %v, running %v (%s)",
			len(reply), sum, tally, want, reserve, r, cerr, merr, amp.NameOf(merr))
	}
}
