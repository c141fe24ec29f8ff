package etcdledger

import (
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
)

// Attack: a slow or partitioned etcd loses the answers of many Claims;
// each one's clean-up is parked until its message expires, up to 7 days
// and the clock skew later (FLEET-31). Before, parked clean-ups sat in
// the cleaner's one queue, and any queued clean-up woke the cleaner at
// the end of every Unclaim, which Ticket.end makes for every invocation
// (agent/ledger/ledger.go): each honest invocation then made a round
// that read every parked claim key again, ceil(P/128) reads for P
// parked (FLEET-34), so the lost claims of one bad minute multiplied
// every later invocation's etcd calls for days (review: one parked
// claim read 200 times for 200 invocations; here 300 parked, 40
// invocations, some 120 reads more than the same invocations with none
// parked). They also counted in Stats().Cleanups and in the queue's cap,
// where the refunds' half was full at 32,768 of them. Now parked ones
// are kept apart, woken by nothing but their own look, at most once per
// SessionTTL: the same invocations make as many etcd calls with 300
// parked as with none, Cleanups is 0 and Parked 300.
func TestParkedLostClaimsAreNotReadAgainByEachInvocation(t *testing.T) {
	c := etcdtest.Start(t, 1)
	var calls atomic.Int64
	s, err := Open(Options{Endpoints: c.Endpoints(), Prefix: "/parked-wake/", Now: time.Now,
		OpTimeout: 5 * time.Second, SessionTTL: time.Minute, // no timed look while the test runs
		Limits:  ledger.Limits{Budget: 1 << 20, PerCaller: 1 << 18},
		Observe: func(string, time.Duration, error) { calls.Add(1) }})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	l, err := ledger.New(s, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	expires := time.Now().Add(time.Hour)
	// invocations runs n honest invocations, each Start and Abandon (its
	// Unclaim, as Ticket.end makes at the end of every invocation), and
	// reports the etcd calls they made.
	seq := 0
	invocations := func(n int) int64 {
		t.Helper()
		before := calls.Load()
		for range n {
			seq++
			id := [16]byte{0x35, byte(seq >> 8), byte(seq)}
			for deadline := time.Now().Add(etcdtest.Settle); ; time.Sleep(50 * time.Millisecond) {
				st, err := l.Start("did:example:honest", id, expires)
				if err == nil {
					if st.State != ledger.Fresh {
						t.Fatalf("invocation %d: %v, want Fresh", seq, st.State)
					}
					st.Ticket.Abandon()
					break
				}
				if !amp.AsError(err).Code.Retryable() || time.Now().After(deadline) {
					t.Fatalf("invocation %d: %v", seq, err)
				}
			}
		}
		return calls.Load() - before
	}
	invocations(5) // the bucket's lease, the principal's counters: granted and read once
	const n = 40
	base := invocations(n)

	const parked = 300
	cl := &s.cleaner
	looked := calls.Load()
	for i := range parked {
		k := ledger.Key{Sender: "did:example:lost", ID: [16]byte{0x53, byte(i >> 8), byte(i)}}
		cl.add(cleanup{k: k, token: "lost." + itoa(int64(i)), entry: true, until: expires.Unix()})
	}
	// The first look (one round, ceil(300/128) reads) finds none applied.
	for deadline := time.Now().Add(etcdtest.Settle); cl.pending() != 0 || calls.Load()-looked < 3; time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the first look for the lost claims: %d pending, %d calls", cl.pending(), calls.Load()-looked)
		}
	}
	if st := s.Stats(); st.Cleanups != 0 || st.Parked != parked {
		t.Fatalf("after the first look: Cleanups %d, Parked %d; want 0 and %d (a lost claim not applied yet is parked, "+
			"not a pending clean-up)", st.Cleanups, st.Parked, parked)
	}
	with := invocations(n)
	t.Logf("%d invocations: %d etcd calls with none parked, %d with %d parked", n, base, with, parked)
	// A few calls of slack for a retried Start on a loaded machine; before,
	// each invocation read the 300 parked claim keys again (3 reads).
	if most := base + (parked+combineMaxOps-1)/combineMaxOps + n/8; with > most {
		t.Fatalf("%d invocations with %d lost claims parked made %d etcd calls, want at most %d "+
			"(%d with none parked): the parked claims are read again at each invocation's Unclaim",
			n, parked, with, most, base)
	}
	if st := s.Stats(); st.Cleanups != 0 || st.Parked != parked {
		t.Fatalf("after the invocations: Cleanups %d, Parked %d; want 0 and %d", st.Cleanups, st.Parked, parked)
	}
}
