package agent

import (
	"fmt"
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
		slow := &slowHandler{d: 20 * time.Millisecond}
		e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", slow.handle), smallResults())
		pings := sealN(t, e, e.caller, 64, amp.TypePing, nil)
		invokes := sealN(t, e, e.caller, 1024, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", benchParams))
		stopPings, _ := loop(t, e, "127.0.0.1", pings, workers, false, true)
		time.Sleep(20 * time.Millisecond) // the caller is busy
		stopFlood, _ := loop(t, e, "127.0.0.2", invokes, 128, true, true)
		time.Sleep(400 * time.Millisecond)
		stopFlood()
		stopPings()
		t.Logf("caller with %d in flight: the flood's handler ran at most %d at once, %d calls", workers, slow.most.Load(), slow.calls.Load())
		if most := slow.most.Load(); most > bound {
			t.Errorf("caller with %d PINGs in flight: a flood of slow invocations ran %d at once (%d calls in 0.4 s); want at most %d", workers, most, slow.calls.Load(), bound)
		}
	}
}

// BenchmarkHonestPingWithDeepQueueUnderSlowHandlerFlood:
// BenchmarkHonestPingUnderSlowHandlerFlood with 16 honest goroutines
// (the HTTP binding's default per peer) instead of 8, so that most of
// the caller's PINGs wait for a slot. It reports the honest PINGs per
// second ("ping/s") and the flood's handler calls per honest PING
// ("flood-calls/ping"); compare flood=true with flood=false.
func BenchmarkHonestPingWithDeepQueueUnderSlowHandlerFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		b.Run(fmt.Sprintf("flood=%v", flood), func(b *testing.B) {
			slow := &slowHandler{d: 5 * time.Millisecond}
			e := newEnv(b, withHandler("org.agentries.code-review:2.1.0", slow.handle), smallResults())
			pings := presignBody(b, e, b.N, amp.TypePing, nil)
			stop := func() {}
			if flood {
				invokes := sealN(b, e, e.caller, 4096, amp.TypeCapInvoke, invokeBody(b, "org.agentries.code-review:2.1.0", benchParams))
				stop, _ = loop(b, e, "127.0.0.2", invokes, 128, false, false)
				time.Sleep(100 * time.Millisecond) // the flood settles
			}
			before := slow.calls.Load()
			b.ResetTimer()
			start := time.Now()
			_, wait := loop(b, e, "127.0.0.1", pings, 16, true, true)
			wait()
			d := time.Since(start)
			b.StopTimer()
			calls := slow.calls.Load() - before
			stop()
			b.ReportMetric(float64(b.N)/d.Seconds(), "ping/s")
			b.ReportMetric(float64(calls)/float64(b.N), "flood-calls/ping")
		})
	}
}

// BenchmarkHonestDurableUnderBadSignatureFloodAndAPingStream: 8 honest
// callers (one address) invoke a capability with the durable ledger,
// alone, under BenchmarkHonestDurableUnderBadSignatureFlood's flood of
// bad signatures, and under the same flood plus a light stream of valid
// PINGs (one in flight) from a third address. It reports the honest
// callers' invocations per second ("inv/s"): compare each with alone.
// The flood, ignored as a queued one, no longer lifts the average that
// holds the callers; the stream's one message alone sets it.
func BenchmarkHonestDurableUnderBadSignatureFloodAndAPingStream(b *testing.B) {
	for _, mode := range []string{"alone", "flood", "flood+stream"} {
		b.Run(mode, func(b *testing.B) {
			e := newEnv(b, withHandler("org.agentries.code-review:2.1.0", noop), smallResults())
			msgs := presign(b, e, b.N)
			bad := presignBody(b, e, 64, amp.TypePing, nil)
			for _, m := range bad {
				m[len(m)-1] ^= 1 // the last byte is in sig
			}
			pings := sealN(b, e, e.caller, 64, amp.TypePing, nil)
			stop, stopStream := func() {}, func() {}
			if mode != "alone" {
				stop = badSignatureFlood(b, e, bad)
			}
			if mode == "flood+stream" {
				stopStream, _ = loop(b, e, "127.0.0.3", pings, 1, false, false)
			}
			time.Sleep(100 * time.Millisecond) // the flood settles
			_, wait := loop(b, e, "127.0.0.1", msgs, 8, true, true)
			b.ResetTimer()
			start := time.Now()
			wait()
			d := time.Since(start)
			b.StopTimer()
			stopStream()
			stop()
			b.ReportMetric(float64(b.N)/d.Seconds(), "inv/s")
		})
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
