package agent

import (
	"context"
	"crypto/ed25519"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
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

// benchQuery is the CAP_QUERY of the HTTP query benchmarks: every version
// of a capability with five (one page).
func benchQuery(b *testing.B) []byte {
	b.Helper()
	q, err := capability.Query{Filter: capability.Filter{Capability: "org.agentries.paging"}}.Encode()
	if err != nil {
		b.Fatal(err)
	}
	return q
}

// BenchmarkHTTPQuery: signed CAP_QUERYs (one page of five descriptors) over
// the HTTP binding, 1/8/64 clients, each message distinct. Compare with
// BenchmarkHTTPQueryBaseline.
func BenchmarkHTTPQuery(b *testing.B) {
	for _, n := range loadClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			e := newEnv(b, withConfig(func(c *Config) { c.Replay = NewMemoryReplay() }))
			msgs := presignBody(b, e, b.N, amp.TypeCapQuery, benchQuery(b))
			srv := httptest.NewServer(NewHTTPHandler(e.agent, HTTPOptions{}))
			defer srv.Close()
			runLoad(b, srv.URL, n, func(i int) []byte { return msgs[i] })
		})
	}
}

// BenchmarkHTTPQueryBaseline: a minimal net/http server doing only the
// primitives of a query per request: canonical CBOR of the message, Ed25519
// verify, the CAP_DECLARE body encoded, Ed25519 sign of a reply of the
// agent's size.
func BenchmarkHTTPQueryBaseline(b *testing.B) {
	for _, n := range loadClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			e := newEnv(b, withConfig(func(c *Config) { c.Replay = NewMemoryReplay() }))
			msgs := presignBody(b, e, 1, amp.TypeCapQuery, benchQuery(b))
			// The agent's real answer gives the declare body and reply size.
			raw, err := e.agent.Handle(context.Background(), msgs[0])
			if err != nil {
				b.Fatal(err)
			}
			reply := e.receive(e.caller, raw)
			decl, err := capability.DecodeDeclare(reply.Body)
			if err != nil {
				b.Fatal(err)
			}
			r, _ := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now})
			m, err := r.Receive(context.Background(), msgs[0])
			if err != nil {
				b.Fatal(err)
			}
			sigInput, pub := m.SigInput(), e.caller.SigningKey.Public().(ed25519.PublicKey)
			out := make([]byte, len(raw))
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				if err != nil {
					http.Error(w, "read", http.StatusBadRequest)
					return
				}
				if _, err := (amp.Limits{}).Canonical(body); err != nil || !ed25519.Verify(pub, sigInput, m.Sig) {
					http.Error(w, "verify", http.StatusBadRequest)
					return
				}
				if _, err := decl.Encode(); err != nil {
					http.Error(w, "encode", http.StatusInternalServerError)
					return
				}
				ed25519.Sign(e.provider.SigningKey, out)
				w.Header().Set("Content-Type", "application/cbor")
				w.Write(out)
			}))
			defer srv.Close()
			runLoad(b, srv.URL, n, func(int) []byte { return msgs[0] })
		})
	}
}
