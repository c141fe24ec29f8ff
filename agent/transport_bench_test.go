//go:build unix

package agent

import (
	"context"
	"net"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/transport/amphttp"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

// benchCallers is the concurrency of the transport comparison.
const benchCallers = 64

// runCallers sends msgs[i] for i in [0, len(msgs)) through rt from
// benchCallers goroutines and reports items per second (items = perMsg
// for each message sent).
func runCallers(b *testing.B, msgs [][]byte, perMsg int, rt func(ctx context.Context, msg []byte) ([]byte, error)) {
	b.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), processCPU(b)
	for c := 0; c < benchCallers; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= len(msgs) {
					return
				}
				if _, err := rt(ctx, msgs[i]); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed, cpu := time.Since(start), processCPU(b)-cpu0
	b.StopTimer()
	items := float64(len(msgs) * perMsg)
	b.ReportMetric(items/elapsed.Seconds(), "items/s")
	// The CPU the process spent per item (agent and load generator): on a
	// machine shared with other work, throughput follows the CPU the
	// scheduler grants, while this follows only the work done.
	b.ReportMetric(float64(cpu.Microseconds())/items, "cpu-µs/item")
}

// processCPU is the user and system CPU time of this process so far.
func processCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkTransports compares, in one run and with 64 concurrent callers,
// signed CAP_INVOKEs (no-op handler, ledger in memory) handed to the agent
// in-process, over HTTP, over AMPS/TCP (one connection, pipelined), and
// over HTTP in BATCHes of 32. The ratios of items/s are the figures of
// docs/PERFORMANCE.md.
func BenchmarkTransports(b *testing.B) {
	setup := func(b *testing.B) *env {
		return newEnv(b, withHandler("org.agentries.code-review:2.1.0", noop), withMemoryLedger(), withConfig(func(c *Config) { c.InlineHandlers = true }))
	}
	b.Run("inprocess", func(b *testing.B) {
		e := setup(b)
		msgs := presign(b, e, b.N)
		runCallers(b, msgs, 1, e.agent.Handle)
	})
	b.Run("http", func(b *testing.B) {
		e := setup(b)
		msgs := presign(b, e, b.N)
		srv := httptest.NewServer(amphttp.NewHandler(e.agent, oneHostOptions))
		defer srv.Close()
		tr, err := amphttp.NewTransport(srv.URL, benchCallers)
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		runCallers(b, msgs, 1, tr.RoundTrip)
	})
	b.Run("tcp", func(b *testing.B) {
		e := setup(b)
		msgs := presign(b, e, b.N)
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		srv := ampstcp.NewServer(e.agent, ampstcp.ServerOptions{})
		go srv.Serve(ln)
		defer srv.Close()
		tr, err := ampstcp.NewTransport("amp://"+ln.Addr().String(), ampstcp.ClientOptions{})
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		runCallers(b, msgs, 1, tr.RoundTrip)
	})
	// batches presigns b.N invocations in containers of per items.
	batches := func(b *testing.B, e *env, per int) [][]byte {
		n := (b.N + per - 1) / per
		items := presign(b, e, n*per)
		containers := make([][]byte, n)
		for i := range containers {
			body, err := amp.Marshal(amp.BatchBody{Items: items[i*per : (i+1)*per]})
			if err != nil {
				b.Fatal(err)
			}
			_, containers[i] = e.seal(e.caller, amp.TypeBatch, body)
		}
		return containers
	}
	// The same BATCHes handed to the agent directly: what a batch costs
	// without a transport.
	b.Run("inprocess-batch32", func(b *testing.B) {
		e := setup(b)
		runCallers(b, batches(b, e, 32), 32, e.agent.Handle)
	})
	b.Run("http-batch32", func(b *testing.B) {
		e := setup(b)
		const per = 32
		containers := batches(b, e, per)
		srv := httptest.NewServer(amphttp.NewHandler(e.agent, oneHostOptions))
		defer srv.Close()
		tr, err := amphttp.NewTransport(srv.URL, benchCallers)
		if err != nil {
			b.Fatal(err)
		}
		defer tr.Close()
		runCallers(b, containers, per, tr.RoundTrip)
	})
}
