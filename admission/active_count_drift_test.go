package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// walkActive is how many peers of f's table are active at now
// (isActive), counted by walking every one of them: what Fair.active
// computed before it kept a running count (TRANSPORT-16). f.mu is held.
func walkActive(f *Fair, now time.Time) int {
	n := 0
	for _, q := range f.peers {
		if q.isActive(now) {
			n++
		}
	}
	return n
}

// TestActiveCountDriftGrowsAFlooderShare: the Inside rule gives a peer
// the average of the other active peers plus one, so every active peer
// left out of the gate's running count (a peer whose messages are all
// parked, one that lingers, one whose wait ended) lowers the divisor and
// raises a flooder's share: with 16 honest lingering addresses missed,
// 16 addresses with 128 slow invocations parked each would take their
// held resumes back ahead of everyone (TRANSPORT-16; a benchmark fixture
// that bypassed the count showed it: heldResumes). What should happen: at
// every moment the running count (Fair.active) equals a walk of every
// peer in the table (walkActive), whatever the peers do: Enter (with
// waits that end), Verified, done, Idle, Park (nested, as a BATCH
// container and its item), Away (a copy waiting for another's outcome;
// a BATCH container away while its item runs, AGENT-34), resume, and the
// clock moving on (lingers ending, sweeps). Workers drive the gate through its API only; a checker
// compares the two counts under the gate's lock and moves the clock.
func TestActiveCountDriftGrowsAFlooderShare(t *testing.T) {
	f := NewFair(4, 4)
	advance := steppedClock(f)
	peers := []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "2001:db8:1:1::/64", "2001:db8:1:2::/64", "2001:db8:2:1::/64"}

	var work sync.WaitGroup
	for w := range 8 {
		work.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 42))
			for range 150 {
				ctx, cancel := context.WithTimeout(WithPeer(context.Background(), peers[rng.IntN(len(peers))]), time.Duration(rng.IntN(3000))*time.Microsecond)
				msg, done, err := f.Enter(ctx)
				if err != nil {
					cancel()
					continue
				}
				if rng.IntN(4) > 0 {
					f.Verified(msg)
				}
				switch rng.IntN(6) {
				case 0: // a handler wait
					f.Idle(msg)()
				case 1: // a batched write, in progress a while
					back := f.Park(msg)
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
					back()
				case 2: // a BATCH: the container parks while its item runs
					back := f.Park(msg)
					if item, itemDone, err := f.Enter(msg); err == nil {
						f.Verified(item)
						f.Park(item)()
						itemDone()
					}
					back()
				case 3: // a copy waiting for its first copy's outcome
					back := f.Away(msg)
					time.Sleep(time.Duration(rng.IntN(300)) * time.Microsecond)
					back()
				case 4: // a BATCH container away while its item runs
					back := f.Away(msg)
					if item, itemDone, err := f.Enter(msg); err == nil {
						f.Verified(item)
						f.Away(item)()
						itemDone()
					}
					back()
				}
				done()
				cancel()
			}
		})
	}
	finished := make(chan struct{})
	go func() { work.Wait(); close(finished) }()

	rng := rand.New(rand.NewPCG(7, 7))
	checks, drifts := 0, []string(nil)
	// What the checks saw: a peer active by its linger alone, and one
	// active by its parked messages alone.
	lingered, parkedOnly, awayOnly := 0, 0, 0
	for running := true; running; {
		select {
		case <-finished:
			running = false
		default:
		}
		f.mu.Lock()
		now := f.now()
		want, got := walkActive(f, now), f.active(now)
		for _, q := range f.peers {
			switch {
			case q.inside == 0 && q.waiting == 0 && q.parked > 0:
				parkedOnly++
			case q.inside == 0 && q.waiting == 0 && q.away > 0:
				awayOnly++
			case q.inside == 0 && q.waiting == 0 && q.parked == 0 && q.isActive(now):
				lingered++
			}
		}
		f.mu.Unlock()
		checks++
		if got != want && len(drifts) < 5 {
			drifts = append(drifts, fmt.Sprintf("check %d: running count %d, table %d", checks, got, want))
		}
		// Mostly steps within a linger (peers linger and stop), at
		// times past two of them (sweeps).
		if rng.IntN(500) == 0 {
			advance(250 * time.Millisecond)
		} else {
			advance(time.Duration(rng.IntN(100)) * time.Microsecond)
		}
		runtime.Gosched()
	}
	f.mu.Lock()
	if f.wake != nil {
		f.wake.Stop()
	}
	f.mu.Unlock()
	for _, d := range drifts {
		t.Error(d)
	}
	if f.free != 4 || f.inside != 0 || f.busy != 0 {
		t.Fatalf("after every message: %d free, %d inside, %d counted busy; want 4, 0, 0", f.free, f.inside, f.busy)
	}
	t.Logf("%d checks, the running count equal to the table's walk; %d peers seen lingering, %d with only parked messages, %d with only messages away", checks, lingered, parkedOnly, awayOnly)
	if lingered == 0 || parkedOnly == 0 || awayOnly == 0 {
		t.Errorf("the checks saw %d lingering peers, %d with only parked messages and %d with only messages away: the trace did not cover all three", lingered, parkedOnly, awayOnly)
	}
}
