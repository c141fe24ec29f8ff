package etcdledger

import (
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
)

// Attack: the lost Claims of one slow minute, each parked until its
// message expires (FLEET-31), filled the cleaner's one queue: past
// 32,768 of them every refund of a lockless Finish (FLEET-20) and every
// delete of a counter without a lease (FLEET-33) was dropped, and at
// 65,536 every claim the node gave up was dropped too (left to its
// session), for up to 7 days. Now parked clean-ups have their own room
// (maxParked): a full parked set leaves the queue's whole room to the
// clean-ups it had, the end of an Unclaim wakes no round for them, and
// a round before their look sends etcd nothing for them (FLEET-35).
func TestParkedCleanupsNeverTakeTheRoomOfGivenUpClaims(t *testing.T) {
	bg, stop := context.WithCancel(context.Background())
	defer stop()
	s := &Store{bg: bg, o: Options{OpTimeout: time.Second, SessionTTL: 10 * time.Second}} // no etcd client: any call panics
	cl := &s.cleaner
	cl.s, cl.q, cl.wake = s, map[cleanup]struct{}{}, make(chan struct{}, 1)
	cl.once.Do(func() {}) // no goroutine: the test runs the round
	until := time.Now().Add(time.Hour).Unix()
	cl.mu.Lock()
	for i := range maxParked + 10 {
		k := ledger.Key{Sender: "did:example:lost", ID: [16]byte{0x35, byte(i >> 16), byte(i >> 8), byte(i)}}
		cl.shelve(cleanup{k: k, token: "lost." + itoa(int64(i)), entry: true, until: until})
	}
	cl.mu.Unlock()
	if n := cl.parkedN(); n != maxParked {
		t.Fatalf("parked: %d, want at most maxParked (%d)", n, maxParked)
	}
	given := ledger.Key{Sender: "did:example:given-up", ID: [16]byte{0x35}}
	for _, c := range []cleanup{
		{k: given, rev: 7, entry: true},            // a given-up claim
		{k: given, rev: 8, counter: "/c", take: 1}, // a lockless Finish's refund
		{counter: "/u", rev: 9, stray: true},       // a counter without a lease
	} {
		cl.mu.Lock()
		cl.queue(c)
		_, queued := cl.q[c]
		cl.mu.Unlock()
		if !queued {
			t.Fatalf("%+v dropped with %d lost claims parked: they fill the queue", c, maxParked)
		}
	}
	cl.mu.Lock()
	cl.q = map[cleanup]struct{}{}
	cl.mu.Unlock()
	if n := cl.pending(); n != 0 {
		t.Fatalf("pending with only parked clean-ups: %d, want 0", n)
	}
	cl.unclaiming(given, 1)
	cl.unclaiming(given, -1) // an invocation's Unclaim ends
	select {
	case <-cl.wake:
		t.Fatal("the end of an Unclaim woke the cleaner for parked clean-ups alone")
	default:
	}
	if !cl.round() { // before their look: no etcd call (a nil client) for them
		t.Fatal("a round with only parked clean-ups not due failed")
	}
	if n := cl.parkedN(); n != maxParked {
		t.Fatalf("parked after a round before their look: %d, want %d", n, maxParked)
	}
}
