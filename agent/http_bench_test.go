package agent

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loadClients are the concurrent client counts of the HTTP benchmarks.
var loadClients = []int{1, 8, 64}

// runLoad posts msg(i) for i in [0, b.N) to url from n concurrent clients
// (keep-alive connections, the agent's own HTTPTransport) and reports
// requests per second and the p50 and p99 latency.
func runLoad(b *testing.B, url string, n int, msg func(i int) []byte) {
	b.Helper()
	tr, err := NewHTTPTransport(url, n)
	if err != nil {
		b.Fatal(err)
	}
	lat := make([]time.Duration, b.N)
	var next atomic.Int64
	var wg sync.WaitGroup
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < n; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= b.N {
					return
				}
				t := time.Now()
				if _, err := tr.RoundTrip(ctx, msg(i)); err != nil {
					b.Error(err)
					return
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "req/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkHTTPInvoke: signed CAP_INVOKEs over the HTTP binding on
// loopback, 1/8/64 concurrent clients, each message distinct (no replay
// hits), replay cache in memory. Compare with BenchmarkHTTPBaseline at the
// same client count (DESIGN §8: >= 80 %).
func BenchmarkHTTPInvoke(b *testing.B) { benchHTTPAgent(b, true) }

// BenchmarkHTTPInvokeDurable: the same with the durable replay cache (the
// agent's default: one marker and one reply per invocation, group commit).
func BenchmarkHTTPInvokeDurable(b *testing.B) { benchHTTPAgent(b, false) }

func benchHTTPAgent(b *testing.B, memoryReplay bool) {
	for _, n := range loadClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			opts := []envOption{withHandler("org.agentries.code-review:2.1.0", noop)}
			if memoryReplay {
				opts = append(opts, withConfig(func(c *Config) { c.Replay = NewMemoryReplay() }))
			}
			e := newEnv(b, opts...)
			msgs := presign(b, e, b.N)
			srv := httptest.NewServer(NewHTTPHandler(e.agent, HTTPOptions{}))
			defer srv.Close()
			runLoad(b, srv.URL, n, func(i int) []byte { return msgs[i] })
		})
	}
}

// BenchmarkHTTPBaseline: a minimal net/http server doing only the
// primitives of an invocation (BenchmarkInvokePrimitives) per request, on
// the same path, with the same client and a reply of the same size.
func BenchmarkHTTPBaseline(b *testing.B) {
	for _, n := range loadClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			e := newEnv(b)
			work := primitives(b, e)
			msgs := presign(b, e, 1)
			reply := make([]byte, 420)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if _, err := io.ReadAll(io.LimitReader(r.Body, 1<<20)); err != nil {
					http.Error(w, "read", http.StatusBadRequest)
					return
				}
				if err := work(); err != nil {
					http.Error(w, "work", http.StatusInternalServerError)
					return
				}
				w.Header().Set("Content-Type", "application/cbor")
				w.Write(reply)
			}))
			defer srv.Close()
			runLoad(b, srv.URL, n, func(int) []byte { return msgs[0] })
		})
	}
}
