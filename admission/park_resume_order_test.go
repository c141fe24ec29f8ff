package admission

import (
	"context"
	"testing"
	"time"
)

// Second review of Park (8680360): the order in which messages that wait
// to take a slot again get one (seq: first come, first served, plain
// Resume callers and parked resumes together), when a held parked resume
// becomes resumable with time alone (the linger that held its peer at its
// share ends) and a later caller takes the free slot by a fast path that
// does not look at the held queue (Resume; unparkLater).

// TestHeldResumeFreedByALingerEndingGoesBeforeALaterCaller: address A
// parks a message B (its "running" record is written) and has a second
// message inside, waiting without a slot (Leave: its handler runs);
// another address lingers with nothing inside (a busy caller, its
// replies on the way), so A's share is one message inside and B's resume
// is held (resumable). The linger ends (the clock moves 300 ms on): B may
// take the free slot now, before anything that asks after it. A later
// caller — A's own message coming back from its handler (Resume), or
// the parked message of a third address (Park's resume) — must not take
// the one free slot first while B, which came first, goes on waiting
// (threat: the fast paths of Resume and unparkLater take a free slot
// whenever no plain Resume waits, without looking at the parked queue;
// a resume held by a linger that ended waits behind every later caller
// until the next dispatch: the next done, or the 100 ms timer, which
// finds no slot free).
func TestHeldResumeFreedByALingerEndingGoesBeforeALaterCaller(t *testing.T) {
	const a, busy, third, fourth = "10.0.0.66", "10.0.0.7", "10.0.0.9", "10.0.0.10"
	for _, c := range []struct {
		later string
		// waiting: A's messages inside that wait without a slot
		// (Leave); fourth: the fourth address's. Chosen so that B is
		// held while the busy address lingers, and resumable after.
		waiting, fourth int
	}{
		{later: "Resume", waiting: 1},
		{later: "Park", waiting: 2, fourth: 3},
	} {
		t.Run(c.later, func(t *testing.T) {
			f := NewFair(1, 0)
			advance := steppedClock(f)
			var leaving []func()
			leave := func(peer string) {
				_, done := enterCtx(t, f, peer)
				f.Leave() // waits for its handler, counted
				leaving = append(leaving, done)
			}
			for range c.fourth {
				leave(fourth)
			}
			var thirdResume, thirdDone func()
			if c.later == "Park" {
				// The third address's message parks (its record is
				// written); with nothing of its address inside, it may
				// come back at once.
				var tctx context.Context
				tctx, thirdDone = enterCtx(t, f, third)
				thirdResume = f.Park(tctx)
			}
			for range FairLingerBusy {
				enter(t, f, busy)() // a busy caller, answered: it lingers
			}
			bctx, bDone := enterCtx(t, f, a)
			bResume := f.Park(bctx) // B's record is being written
			for range c.waiting {
				leave(a)
			}
			back := make(chan struct{})
			go func() { bResume(); close(back) }()
			waitBack(t, f, a, 1)
			select {
			case <-back:
				t.Fatal("B's resume was granted above its share while the other address lingers")
			default:
			}
			advance(300 * time.Millisecond) // the linger is over
			laterBack := make(chan struct{})
			go func() {
				if c.later == "Resume" {
					f.Resume() // A's message waiting for its handler is back
				} else {
					thirdResume()
				}
				close(laterBack)
			}()
			var order []string
			for len(order) < 2 {
				select {
				case <-back:
					order = append(order, "B")
					back = nil
					bDone()
				case <-laterBack:
					order = append(order, c.later)
					laterBack = nil
					if c.later == "Resume" {
						leaving[len(leaving)-1]()
						leaving = leaving[:len(leaving)-1]
					} else {
						thirdDone()
					}
				case <-time.After(10 * time.Second): // a hang guard (both are granted at once once the linger ends)
					t.Fatalf("granted %v, then nothing for 10 s", order)
				}
			}
			for _, done := range leaving {
				f.Resume()
				done()
			}
			if order[0] != "B" {
				t.Errorf("granted %v: the later %s took the one free slot before B, whose resume was queued first and was resumable once the linger ended", order, c.later)
			}
			f.mu.Lock()
			inside, free := f.inside, f.free
			if f.wake != nil {
				f.wake.Stop()
			}
			f.mu.Unlock()
			if inside != 0 || free != 1 {
				t.Fatalf("after every message: inside %d, free %d; want 0, 1", inside, free)
			}
		})
	}
}

// waitBack waits until peer has n parked messages queued to take a slot
// again (a state that lasts once reached: 10 s is a hang guard).
func waitBack(t *testing.T, f *Fair, peer string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		f.mu.Lock()
		k := 0
		if p := f.peers[peer]; p != nil {
			k = len(p.back)
		}
		f.mu.Unlock()
		if k >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d parked resumes of %s queued after 10 s, want %d", k, peer, n)
		}
		time.Sleep(time.Millisecond)
	}
}
