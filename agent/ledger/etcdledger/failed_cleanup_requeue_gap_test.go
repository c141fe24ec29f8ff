package etcdledger

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
)

// Attack: FLEET-21 makes one runner per key: while a clean-up of k runs
// (the round's, or a copy's claimHeld), a copy of the message that finds
// the node's own untracked claim waits (take reports busy) instead of
// deleting the claim alone; and a failed clean-up goes back on the queue,
// where the copy's take finds it and runs it whole (claim, unrun entry,
// refund). Before, cleaner.end (cleanup.go) dropped the run's mark under
// the cleaner's lock, unlocked, and only then queued the failed clean-up
// again (cl.add took the lock anew): in between, k was neither busy nor
// queued. A copy's claimHeld that took k in that gap (an attacker
// resending a message the node refused while etcd was slow: each copy
// comes back after WaitPoll) found nothing queued and made a clean-up of
// its own, the claim alone (entry only for a lost Claim answer): the
// unrun entry stayed without a claimer, the next copy took it as Lost and
// the message was answered "outcome unknown" for good, though its handler
// never ran — FLEET-21's fault (2) again. Now: end queues a failed
// clean-up again in the same critical section that drops its mark, so a
// take sees k busy or the clean-up queued, never neither.
func TestFailedCleanupNeverLeavesKeyUnmarkedAndUnqueued(t *testing.T) {
	if runtime.GOMAXPROCS(0) < 2 {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(2))
	}
	bg, stop := context.WithCancel(context.Background())
	stop() // the cleaner's goroutine returns at once: the queue is the test's
	s := &Store{bg: bg, o: Options{OpTimeout: time.Second, SessionTTL: 10 * time.Second}}
	cl := &s.cleaner
	cl.s, cl.q, cl.wake = s, map[cleanup]struct{}{}, make(chan struct{}, 1)
	k := ledger.Key{Sender: "did:example:resender", ID: [16]byte{0x22, 3}}
	// The queued undo of a refused message: its claim and unrun entry.
	c := cleanup{k: k, rev: 42, entry: true, cost: 1200, end: 1 << 30}
	// The gap is a few instructions wide: race until one take falls in it,
	// for at most 10 s (a hit comes within the first 20,000 races here).
	gaps, trials := 0, 0
	for dl := time.Now().Add(10 * time.Second); gaps == 0 && time.Now().Before(dl); trials++ {
		cl.add(c)
		if run, later := cl.begin(c); !run || later {
			t.Fatalf("setup: the round could not take the clean-up (%v %v)", run, later)
		}
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			cl.end(c, false) // the round's try failed (etcd slow): queued again
		}()
		for { // a copy's claimHeld, taking k
			out, busy := cl.take(k)
			if busy {
				continue
			}
			if len(out) == 0 {
				gaps++                  // claimHeld would now delete the claim alone
				out = []cleanup{{k: k}} // the run take marked: ended
			}
			for _, o := range out {
				cl.end(o, true)
			}
			break
		}
		wg.Wait()
		cl.mu.Lock()
		delete(cl.q, c)
		cl.mu.Unlock()
	}
	if cl.pending() != 0 {
		t.Fatalf("setup: %d clean-ups left", cl.pending())
	}
	if gaps > 0 {
		t.Fatalf("in %d of %d races a copy's take found the key neither busy nor its failed clean-up queued: "+
			"claimHeld then deletes the claim alone and leaves the refused message's unrun entry, answered "+
			"outcome_unknown for good", gaps, trials)
	}
}
