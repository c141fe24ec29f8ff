package admission

import (
	"context"
	"testing"
	"time"
)

// Review of a change to the fair gate (docs/SPEC-DECISIONS.md
// TRANSPORT-3) that stopped counting a peer's idle messages against a
// peer whose messages only compute: withdrawn, since it let a flood of
// slow invocations outgrow a PING caller (the first test below), and one
// BATCH turned it off. What these tests keep: that rule stays out, and a
// linger's end wakes the messages it held.

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

// TestFloodOfIdleMessagesKeepsNoMoreInsideThanAComputeOnlyCaller: a
// caller whose messages only compute (PINGs: none waits for the disk or
// a handler) looks, to the gate, like a flood of bad signatures; a peer
// whose messages wait without a slot (a validly signed flood of durable
// invokes, or of a slow handler's) must still be held to about as many
// inside as that caller (threat, TRANSPORT-3: "a flooder with 128
// messages in flight keeps about as many inside as a caller with 16, not
// eight times as many"; each of its messages holds a goroutine, a ledger
// claim, a handler, and comes back through Resume ahead of every new
// message of the caller). The caller keeps 8 messages in flight, 4
// computing in the 4 slots; the flooder 40, each idle once granted. After
// 24 of the caller's messages, the flooder has at most the caller's
// count plus one inside.
func TestFloodOfIdleMessagesKeepsNoMoreInsideThanAComputeOnlyCaller(t *testing.T) {
	const caller, flooder, slots = "10.0.0.7", "10.0.0.66", 4
	f := NewFair(slots, 0)
	var pending []<-chan entered
	for range 2 * slots {
		pending = append(pending, queued(f, context.Background(), caller))
	}
	var flood []<-chan entered
	for range 40 {
		flood = append(flood, queued(f, context.Background(), flooder))
	}
	var held []func()
	var idle []entered
	defer func() {
		drain(append(pending, flood...))
		for _, done := range held {
			done()
		}
		for _, r := range idle {
			f.Resume()
			r.done()
		}
	}()
	// settle takes the grants until the caller computes in every slot;
	// the flooder's messages go idle as they are granted.
	settle := func() {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); len(held) < slots; {
			if time.Now().After(deadline) {
				t.Fatalf("the caller holds %d of the %d slots for 10 s", len(held), slots)
			}
			for i, c := range pending {
				select {
				case r := <-c:
					held = append(held, r.done)
					pending = append(pending[:i], pending[i+1:]...)
				default:
					continue
				}
				break
			}
			for i, c := range flood {
				if c == nil {
					continue
				}
				select {
				case r := <-c:
					f.Leave() // its handler runs, without a slot
					idle = append(idle, r)
					flood[i] = nil
				default:
				}
			}
			time.Sleep(time.Millisecond)
		}
	}
	for range 24 {
		settle()
		held[0]()
		held = held[1:]
		pending = append(pending, queued(f, context.Background(), caller))
	}
	settle()
	f.mu.Lock()
	a, c := f.peers[flooder].inside, f.peers[caller].inside
	f.mu.Unlock()
	if a > c+1 {
		t.Fatalf("a flood whose messages wait without a slot has %d inside against a compute-only caller's %d; want at most %d", a, c, c+1)
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
// BenchmarkHonestDurableUnderBadSignatureFloodAndABatch once its honest
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
