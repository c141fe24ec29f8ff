package agent

import (
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// Review of a rule, withdrawn, of the fair gate: an active peer with more
// messages waiting for a slot than the asking peer has inside did not
// hold it (admission.Fair, allowed). An honest caller that keeps more
// messages in flight than the agent has slots has a deep queue of its
// own, and stopped holding a flood whose messages wait without a slot.
// These tests keep any later rule from doing the same.

// TestSlowHandlerFloodIsNotLiftedByAPingCallersDeepQueue: TRANSPORT-3
// promises that "a flooder with 128 in flight keeps about as many inside
// as a caller with 16". A PING caller keeps 16 (the HTTP binding's
// default per peer) or 32 in flight, so most of its messages wait for
// one of the 2 x GOMAXPROCS slots; an authorized key at another address
// keeps 128 invocations of a slow capability in flight. The flood's
// handler must run at most the caller's count inside plus one at once,
// that is at most 2 x GOMAXPROCS + 1 (threat: with the caller's deep
// queue ignored, the flood kept as many inside as the caller had
// waiting, each a goroutine, a ledger claim and a handler, each coming
// back through Resume ahead of the caller's next PING).
func TestSlowHandlerFloodIsNotLiftedByAPingCallersDeepQueue(t *testing.T) {
	bound := int64(2*runtime.GOMAXPROCS(0) + 1)
	for _, workers := range []int{16, 32} {
		slow := slowFloodAgainstPings(t, workers, func(*env) { time.Sleep(400 * time.Millisecond) })
		t.Logf("caller with %d in flight: the flood's handler ran at most %d at once, %d calls", workers, slow.most.Load(), slow.calls.Load())
		if most := slow.most.Load(); most > bound {
			t.Errorf("caller with %d PINGs in flight: a flood of slow invocations ran %d at once (%d calls in 0.4 s); want at most %d", workers, most, slow.calls.Load(), bound)
		}
	}
}

// TestSlowHandlerFloodIsNotLiftedByABadSignatureFloodAtASecondAddress:
// an attacker with two addresses and one authorized key deepens an
// honest caller's queue without a key (256 bad signatures in flight from
// 127.0.0.2 take half the turns), so that the caller, 8 PINGs in flight,
// has more waiting than the slow flood from 127.0.0.3 (128 invocations
// in flight) has inside, and stops holding it. The slow flood's handler
// must still run at most the caller's count inside plus one at once, at
// most 2 x GOMAXPROCS + 1 (3 before the rule; 8 with it, on 2 cores).
func TestSlowHandlerFloodIsNotLiftedByABadSignatureFloodAtASecondAddress(t *testing.T) {
	slow := &slowHandler{d: 20 * time.Millisecond}
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", slow.handle), smallResults())
	pings := sealN(t, e, e.caller, 64, amp.TypePing, nil)
	invokes := sealN(t, e, e.caller, 1024, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", benchParams))
	bad := sealN(t, e, e.caller, 64, amp.TypePing, nil)
	for _, m := range bad {
		m[len(m)-1] ^= 1 // the last byte is in sig
	}
	stopPings, _ := loop(t, e, "127.0.0.1", pings, 8, false, true)
	defer stopPings()
	stopBad := sync.OnceFunc(badSignatureFlood(t, e, bad))
	defer stopBad()
	time.Sleep(20 * time.Millisecond) // the caller's queue is deep
	stopFlood, _ := loop(t, e, "127.0.0.3", invokes, 128, true, true)
	defer stopFlood()
	time.Sleep(400 * time.Millisecond)
	stopFlood()
	stopBad()
	stopPings()
	t.Logf("the slow flood's handler ran at most %d at once, %d calls", slow.most.Load(), slow.calls.Load())
	if most, bound := slow.most.Load(), int64(2*runtime.GOMAXPROCS(0)+1); most > bound {
		t.Fatalf("with a bad-signature flood at a second address, a flood of slow invocations ran %d at once against a PING caller with 8 in flight (%d calls in 0.4 s); want at most %d", most, slow.calls.Load(), bound)
	}
}
