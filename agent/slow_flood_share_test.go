package agent

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// Review of a change to the fair gate (docs/SPEC-DECISIONS.md
// TRANSPORT-3), withdrawn: against a peer whose messages only compute, a
// peer's messages waiting without a slot did not count, which let a flood
// of slow invocations outgrow a PING caller; kept: a peer lingers only
// after messages that verified.

// slowHandler is a handler that takes d, counting the calls running at
// once in now and the most of them in most.
type slowHandler struct {
	d         time.Duration
	now, most atomic.Int64
	calls     atomic.Int64
}

func (s *slowHandler) handle(ctx context.Context, p any) (any, error) {
	n := s.now.Add(1)
	for {
		m := s.most.Load()
		if n <= m || s.most.CompareAndSwap(m, n) {
			break
		}
	}
	s.calls.Add(1)
	defer s.now.Add(-1)
	select {
	case <-time.After(s.d):
	case <-ctx.Done():
	}
	return map[string]any{"issues": []any{}, "version": "slow"}, nil
}

// sealN signs n messages of typ with body from id to e's agent.
func sealN(tb testing.TB, e *env, id amp.Identity, n int, typ amp.Type, body []byte) [][]byte {
	tb.Helper()
	out := make([][]byte, n)
	for i := range out {
		_, out[i] = e.seal(id, typ, body)
	}
	return out
}

// loop calls Handle from peer with msgs[i], i counting up from one
// counter shared by workers goroutines, until the returned stop (or
// until msgs run out, when once is set: wait returns then); an error
// fails tb when fail is set. stop ends the context of the messages still
// waiting for a slot.
func loop(tb testing.TB, e *env, peer string, msgs [][]byte, workers int, once, fail bool) (stop, wait func()) {
	ctx, cancel := context.WithCancel(admission.WithPeer(context.Background(), peer))
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				i := next.Add(1) - 1
				if once && i >= int64(len(msgs)) {
					return
				}
				if _, err := e.agent.Handle(ctx, msgs[i%int64(len(msgs))]); err != nil && fail && ctx.Err() == nil {
					tb.Error(err)
					return
				}
			}
		}()
	}
	return sync.OnceFunc(func() { cancel(); wg.Wait() }), wg.Wait
}

// TestSlowHandlerFloodKeepsAboutAsManyInsideAsAPingCaller: a caller
// whose messages only compute (PINGs) looks, to the fair gate, like a
// flood of bad signatures, so against it a peer's messages waiting
// without a slot no longer count (threat: an authorized key at another
// address keeping 128 invocations of a slow capability in flight, each
// holding a goroutine, a durable ledger claim and a handler, and each
// coming back through Resume ahead of the PING caller's next message,
// where TRANSPORT-3 promises "a flooder with 128 messages in flight
// keeps about as many inside as a caller with 16"). While a caller keeps
// 8 PINGs in flight, the flooder's handler runs at most 8 at once (the
// caller has at most 2 x GOMAXPROCS slots' worth inside).
func TestSlowHandlerFloodKeepsAboutAsManyInsideAsAPingCaller(t *testing.T) {
	slow := slowFloodAgainstPings(t, 8, func(*env) { time.Sleep(400 * time.Millisecond) })
	t.Logf("the flood's handler ran at most %d at once, %d calls", slow.most.Load(), slow.calls.Load())
	if most := slow.most.Load(); most > 8 {
		t.Fatalf("a flood of slow invocations ran %d at once against a PING caller with 8 in flight (%d calls in 0.4 s); want at most 8", most, slow.calls.Load())
	}
}

// slowFloodAgainstPings starts an agent whose capability takes 20 ms, a
// PING caller at 127.0.0.1 keeping pingers PINGs in flight and, once it
// is busy, an authorized key at 127.0.0.2 keeping 128 invocations of that
// capability in flight; it runs during with the agent's env, then stops
// both. It returns the capability's handler, which counts its runs.
func slowFloodAgainstPings(t *testing.T, pingers int, during func(e *env)) *slowHandler {
	t.Helper()
	slow := &slowHandler{d: 20 * time.Millisecond}
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", slow.handle), smallResults())
	pings := sealN(t, e, e.caller, 64, amp.TypePing, nil)
	invokes := sealN(t, e, e.caller, 1024, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", benchParams))
	stopPings, _ := loop(t, e, "127.0.0.1", pings, pingers, false, true)
	defer stopPings()
	time.Sleep(20 * time.Millisecond) // the caller is busy
	stopFlood, _ := loop(t, e, "127.0.0.2", invokes, 128, true, true)
	defer stopFlood()
	during(e)
	return slow
}

// BenchmarkHonestPingUnderSlowHandlerFlood: 8 or 16 honest goroutines
// (one address; 16 is the HTTP binding's default per peer, so that most
// of the caller's PINGs wait for a slot) send PINGs, alone and while an
// authorized key at another address keeps 128 invocations of a
// capability that takes 5 ms in flight. It reports the honest PINGs per
// second ("ping/s") and the flood's handler calls per honest PING
// ("flood-calls/ping"); compare flood=true with flood=false
// (docs/PERFORMANCE.md, "Durable callers under a flood of bad
// signatures", has the figures of the gate as it is and of the two
// withdrawn rules).
func BenchmarkHonestPingUnderSlowHandlerFlood(b *testing.B) {
	for _, callers := range []int{8, 16} {
		for _, flood := range []bool{false, true} {
			b.Run(fmt.Sprintf("callers=%d/flood=%v", callers, flood), func(b *testing.B) {
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
				_, wait := loop(b, e, "127.0.0.1", pings, callers, true, true)
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
}

// BenchmarkHonestDurableUnderBadSignatureFloodAndMore: 8 honest callers
// (one address) invoke a capability with the durable ledger: alone;
// under BenchmarkHonestDurableUnderBadSignatureFlood's flood of bad
// signatures (from 127.0.0.2, stopped by its context); under the same
// flood plus one BATCH at a time from the flood's address, signed by a
// key no policy names (any fresh did:key) and carrying 64 of the flood's
// bad signatures as items, whose container waits without a slot while
// each item waits its turn in the flood's queue (a rule exempting floods
// whose messages only compute did not apply then); and under the flood
// plus a light stream of valid PINGs, one in flight, from a third
// address (its one message sets the average that holds the callers). It
// reports the honest callers' invocations per second ("inv/s"): compare
// each with alone. Any fix of the durable callers' share must hold in
// every mode.
func BenchmarkHonestDurableUnderBadSignatureFloodAndMore(b *testing.B) {
	for _, mode := range []string{"alone", "flood", "flood+batch", "flood+stream"} {
		b.Run(mode, func(b *testing.B) {
			e := newEnv(b, withHandler("org.agentries.code-review:2.1.0", noop), smallResults())
			msgs := presign(b, e, b.N)
			bad := presignBody(b, e, 64, amp.TypePing, nil)
			for _, m := range bad {
				m[len(m)-1] ^= 1 // the last byte is in sig
			}
			var stops []func()
			if mode != "alone" {
				stop, _ := loop(b, e, "127.0.0.2", bad, 256, false, false)
				stops = append(stops, stop)
			}
			switch mode {
			case "flood+batch":
				_, batch := e.seal(e.stranger, amp.TypeBatch, mustMarshal(b, amp.BatchBody{Items: bad}))
				stop, _ := loop(b, e, "127.0.0.2", [][]byte{batch}, 1, false, true)
				stops = append(stops, stop)
			case "flood+stream":
				pings := sealN(b, e, e.caller, 64, amp.TypePing, nil)
				stop, _ := loop(b, e, "127.0.0.3", pings, 1, false, false)
				stops = append(stops, stop)
			}
			if len(stops) > 0 {
				time.Sleep(100 * time.Millisecond) // the flood settles
			}
			b.ResetTimer()
			start := time.Now()
			_, wait := loop(b, e, "127.0.0.1", msgs, 8, true, true)
			wait()
			d := time.Since(start)
			b.StopTimer()
			for _, stop := range slices.Backward(stops) {
				stop()
			}
			b.ReportMetric(float64(b.N)/d.Seconds(), "inv/s")
		})
	}
}
