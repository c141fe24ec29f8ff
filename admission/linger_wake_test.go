package admission

import (
	"context"
	"testing"
	"time"
)

// Review of a change to the fair gate (docs/SPEC-DECISIONS.md
// TRANSPORT-3) that stopped counting a peer's idle messages against a
// peer whose messages only compute: withdrawn, since it let a flood of
// slow invocations outgrow a PING caller
// (TestIdleFloodIsNotLiftedByAnHonestCallersDeepQueue, its first case),
// and one BATCH turned it off. What this file keeps: a linger's end wakes
// the messages it held.

// drain finishes, in the background, every message of got as it is
// granted.
func drain(got []<-chan entered) {
	for _, c := range got {
		if c != nil {
			go func() {
				if r := <-c; r.err == nil {
					r.done()
				}
			}()
		}
	}
}

// TestLingerEndingWakesAPeerHeldOnlyByIt: a peer held back only by
// another peer's linger must get its slot once the linger is over, but
// nothing runs dispatch then: the gate re-checks only on Enter, done,
// Leave or a wait given up (threat: a BATCH whose container waits, idle,
// for its item, queued behind a message of its own address that the
// linger holds, never finishes; the address's every later message waits
// or is refused peer_busy until some other address sends one or the
// waiting callers give up; seen as a hang, before and after TRANSPORT-3's
// change, of a first version of the agent's
// BenchmarkHonestDurableUnderBadSignatureFloodAndMore once its honest
// callers had finished; its loops now end their contexts). The real
// clock: the busy peer lingers 100-200 ms; its neighbour's message must
// get a slot within 2 s.
func TestLingerEndingWakesAPeerHeldOnlyByIt(t *testing.T) {
	const busy, batcher = "10.0.0.7", "10.0.0.9"
	f := NewFair(4, 0)
	for range FairLingerBusy {
		enter(t, f, busy)() // a busy caller, answered: it lingers
	}
	cctx, container := enterCtx(t, f, batcher)
	f.Leave() // the container waits for its item, without a slot
	msg := queued(f, context.Background(), batcher)
	waitQueued(t, f, batcher, 1)
	item := queued(f, cctx, batcher) // nested, behind msg
	waitQueued(t, f, batcher, 2)
	defer func() {
		drain([]<-chan entered{msg, item})
		// Any event dispatches again: unblock the test's goroutines.
		enter(t, f, "10.0.0.1")()
		f.Resume()
		container()
	}()
	select {
	case r := <-msg:
		r.done()
		msg = nil
	case <-time.After(2 * time.Second):
		f.mu.Lock()
		free := f.free
		f.mu.Unlock()
		t.Fatalf("a message held only by another peer's linger still waits 2 s later, with %d of 4 slots free", free)
	}
}
