package agent

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/admission"
	"github.com/ampbundle/ampbundle/amp"
)

// Review of admission.Fair.Park (c4cb076): a message waiting for the
// local ledger's group commit is parked, and takes its slot back only
// while its address is within its share (the Inside rule), where the
// address's messages waiting without a slot (idle: a copy waiting for its
// first copy's outcome) count.

// TestRetriedInvocationIsNotHeldByItsOwnCopies: a client sends one
// durable invocation several times at once from one address (retries on
// new connections), while a caller at another address keeps one PING in
// flight. The first copy to claim its ticket parks while its "running"
// record is written; the copies admitted meanwhile wait, without a slot
// but counted (idle), for its outcome; once two wait, the address has
// its share (the other's one PING plus one) and the first copy's resume
// is held until the copies' callers give up (threat: a retried
// invocation answered only after the retries time out, for as long as
// any other caller is busy; before Park its "running" write ended with
// Resume, never refused). Every copy must get the invocation's result
// in each of 100 rounds (the copies do not always arrive in time to
// hold it). Held, a copy waits until its caller gives up: each caller
// gives up after 10 s, a hang guard (a copy is answered in milliseconds),
// so that a held round fails with its copies' errors instead of hanging.
func TestRetriedInvocationIsNotHeldByItsOwnCopies(t *testing.T) {
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", noop), smallResults())
	pings := sealN(t, e, e.caller, 64, amp.TypePing, nil)
	stopPings, _ := loop(t, e, "127.0.0.3", pings, 1, false, true)
	defer stopPings()
	time.Sleep(50 * time.Millisecond) // the PING caller is busy
	body := invokeBody(t, "org.agentries.code-review:2.1.0", benchParams)
	from := admission.WithPeer(context.Background(), "127.0.0.2")
	stuck := 0
	for round := range 100 {
		_, msg := e.seal(e.caller, amp.TypeCapInvoke, body)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var errs []error
		start := time.Now()
		for range 6 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				ctx, cancel := context.WithTimeout(from, 10*time.Second) // hang guard
				defer cancel()
				if _, err := e.agent.Handle(ctx, msg); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		if len(errs) > 0 {
			stuck++
			names := map[amp.ErrName]int{}
			for _, err := range errs {
				names[amp.NameOf(err)]++
			}
			t.Errorf("round %d: %d of 6 copies of one invocation failed after %v: %v", round, len(errs), time.Since(start).Round(time.Millisecond), names)
		}
		if stuck >= 1 {
			break
		}
	}
}

// TestSlowFloodHeldAtItsShareIsNotAwaitedByTheGroupCommit: an authorized
// key at one address keeps 128 invocations of a slow capability in
// flight while a PING caller at another keeps 8. Parked while its
// "running" record is written, each invocation leaves the gate's count,
// so the next is admitted; its resume is then held (its address is at
// its share), with its ticket open and not in its handler: a writer the
// ledger expects soon (Ledger.Expected), whose group commit waits for
// writers that are expected (docs/SPEC-DECISIONS.md PERF-1, PERF-5).
// The held invocations never write while held (threat: about 120
// phantom writers expected at every group commit, which then waits its
// window and stall for them: honest durable callers' latency, as PERF-5's
// flood of bad signatures did; before Park, the flood got past the gate
// only within its share). The ledger must expect at most slots + 1
// writers in the median of samples 1 ms apart. At review the bound was on
// the 90th percentile; but the flood's "running" records queued for one
// group commit at once are real writers, not bounded by the slots now
// that they are parked, and under load (the race detector, other
// packages' tests) their bursts move the tail: p90 7-15 with the mend,
// the median 0-3; the held resumes' phantoms moved the median (9-28,
// p90 17-106, at c4cb076).
func TestSlowFloodHeldAtItsShareIsNotAwaitedByTheGroupCommit(t *testing.T) {
	var seen []int
	slow := slowFloodAgainstPings(t, 8, func(e *env) {
		for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(time.Millisecond) {
			seen = append(seen, e.agent.ledger.Expected())
		}
	})
	slices.Sort(seen)
	median, p90, most := seen[len(seen)/2], seen[len(seen)*9/10], seen[len(seen)-1]
	bound := 2*runtime.GOMAXPROCS(0) + 1
	t.Logf("the ledger expected %d writers (median of %d samples; p75 %d, p90 %d), at most %d; the flood's handler ran at most %d at once, %d calls", median, len(seen), seen[len(seen)*3/4], p90, most, slow.most.Load(), slow.calls.Load())
	if median > bound {
		t.Fatalf("a flood of slow invocations held at its share made the ledger expect %d writers at once (median of 1 ms samples); want at most %d", median, bound)
	}
}

// BenchmarkHonestDurableUnderSlowHandlerFlood: 8 honest callers (one
// address) invoke a capability with the durable ledger, alone and while
// an authorized key at another address keeps 128 invocations of a slow
// capability (20 ms) in flight, whose held resumes the ledger counts as
// writers expected soon (TestSlowFloodHeldAtItsShareIsNotAwaitedByTheGroupCommit).
// It reports the honest invocations per second ("inv/s") and the most
// writers the ledger expected ("expected"): compare flood with alone, and
// with the parent of c4cb076.
func BenchmarkHonestDurableUnderSlowHandlerFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		b.Run(fmt.Sprintf("flood=%v", flood), func(b *testing.B) {
			slow := &slowHandler{d: 20 * time.Millisecond}
			e := newEnv(b, withHandler("org.agentries.code-review:2.1.0", noop), withHandler("org.agentries.code-review:2.0.0", slow.handle), smallResults(),
				withConfig(func(c *Config) { c.MaxResultBytes["org.agentries.code-review:2.0.0"] = 16 << 10 }))
			msgs := presign(b, e, b.N)
			stop := func() {}
			if flood {
				invokes := sealN(b, e, e.caller, 4096, amp.TypeCapInvoke, invokeBody(b, "org.agentries.code-review:2.0.0", benchParams))
				stop, _ = loop(b, e, "127.0.0.2", invokes, 128, false, false)
				time.Sleep(100 * time.Millisecond) // the flood settles
			}
			var most atomic.Int64
			sampled := make(chan struct{})
			quit := make(chan struct{})
			go func() {
				defer close(sampled)
				for {
					select {
					case <-quit:
						return
					case <-time.After(time.Millisecond):
						if n := int64(e.agent.ledger.Expected()); n > most.Load() {
							most.Store(n)
						}
					}
				}
			}()
			b.ResetTimer()
			start := time.Now()
			_, wait := loop(b, e, "127.0.0.1", msgs, 8, true, true)
			wait()
			d := time.Since(start)
			b.StopTimer()
			close(quit)
			<-sampled
			stop()
			b.ReportMetric(float64(b.N)/d.Seconds(), "inv/s")
			b.ReportMetric(float64(most.Load()), "expected")
		})
	}
}

// BenchmarkHonestPingUnderDurableFlood: 8 honest goroutines (one
// address) send PINGs, alone and while an authorized key at another
// address keeps 128 durable invocations of a fast capability in flight:
// most of them parked for the group commit, so its address is active
// with few messages inside, and holds the PING caller to those plus one.
// It reports the honest PINGs per second ("ping/s") and the flood's
// invocations per honest PING ("flood-inv/ping"); compare flood=true with
// flood=false, and with the parent of c4cb076.
func BenchmarkHonestPingUnderDurableFlood(b *testing.B) {
	for _, flood := range []bool{false, true} {
		b.Run(fmt.Sprintf("flood=%v", flood), func(b *testing.B) {
			var calls atomic.Int64
			counted := func(ctx context.Context, p any) (any, error) { calls.Add(1); return noop(ctx, p) }
			e := newEnv(b, withHandler("org.agentries.code-review:2.1.0", counted), smallResults())
			pings := presignBody(b, e, b.N, amp.TypePing, nil)
			stop := func() {}
			if flood {
				invokes := sealN(b, e, e.caller, 2048, amp.TypeCapInvoke, invokeBody(b, "org.agentries.code-review:2.1.0", benchParams))
				stop, _ = loop(b, e, "127.0.0.2", invokes, 128, false, false)
				time.Sleep(100 * time.Millisecond) // the flood settles
			}
			before := calls.Load()
			b.ResetTimer()
			start := time.Now()
			_, wait := loop(b, e, "127.0.0.1", pings, 8, true, true)
			wait()
			d := time.Since(start)
			b.StopTimer()
			n := calls.Load() - before
			stop()
			b.ReportMetric(float64(b.N)/d.Seconds(), "ping/s")
			b.ReportMetric(float64(n)/float64(b.N), "flood-inv/ping")
		})
	}
}
