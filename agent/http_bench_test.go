package agent

import (
	"context"
	"crypto/ed25519"
	"errors"
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
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// loadClients are the concurrent client counts of the HTTP benchmarks.
var loadClients = []int{1, 8, 64}

// runLoad posts msg(i) for i in [0, b.N) to url from n concurrent clients
// (keep-alive connections, the agent's own amphttp.Transport) and reports
// requests per second and the p50 and p99 latency.
func runLoad(b *testing.B, url string, n int, msg func(i int) []byte) {
	b.Helper()
	tr, err := amphttp.NewTransport(url, n)
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
// hits), idempotency ledger in memory. Compare with BenchmarkHTTPBaseline at the
// same client count (target, docs/PERFORMANCE.md: >= 80 %).
func BenchmarkHTTPInvoke(b *testing.B) {
	benchHTTPAgent(b, true, amp.TypeCapInvoke, func(b *testing.B) []byte { return invokeBody(b, "org.agentries.code-review:2.1.0", benchParams) })
}

// BenchmarkHTTPInvokeDurable: the same with the durable ledger (the agent's
// default: one running mark and one reply per invocation, group commit).
func BenchmarkHTTPInvokeDurable(b *testing.B) {
	benchHTTPAgent(b, false, amp.TypeCapInvoke, func(b *testing.B) []byte { return invokeBody(b, "org.agentries.code-review:2.1.0", benchParams) })
}

// BenchmarkHTTPQuery: signed CAP_QUERYs (one page of five descriptors) over
// the HTTP binding, 1/8/64 clients, each message distinct. Compare with
// BenchmarkHTTPQueryBaseline.
func BenchmarkHTTPQuery(b *testing.B) { benchHTTPAgent(b, true, amp.TypeCapQuery, benchQuery) }

// oneHostOptions are the HTTP binding's defaults for a load that comes
// from one host by construction (every benchmark client is on loopback):
// that host may use every request slot, as behind a proxy
// (ampagent serve --peer-share 1), since the benchmarks measure
// throughput, not the sharing between hosts.
var oneHostOptions = amphttp.Options{MaxPeerInFlight: amphttp.DefaultMaxInFlight}

// benchHTTPAgent loads the agent's HTTP binding with distinct presigned
// messages of type typ and body body(b).
func benchHTTPAgent(b *testing.B, memoryLedger bool, typ amp.Type, body func(*testing.B) []byte) {
	for _, n := range loadClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			opts := []envOption{withHandler("org.agentries.code-review:2.1.0", noop)}
			if memoryLedger {
				opts = append(opts, withMemoryLedger())
			}
			e := newEnv(b, opts...)
			msgs := presignBody(b, e, b.N, typ, body(b))
			srv := httptest.NewServer(amphttp.NewHandler(e.agent, oneHostOptions))
			defer srv.Close()
			runLoad(b, srv.URL, n, func(i int) []byte { return msgs[i] })
		})
	}
}

// benchHTTPBaseline loads a minimal net/http server that reads each body,
// runs work on it and answers reply: setup returns the message to send,
// the work and the reply.
func benchHTTPBaseline(b *testing.B, setup func(b *testing.B, e *env) (msg []byte, work func(body []byte) error, reply []byte)) {
	for _, n := range loadClients {
		b.Run("clients="+strconv.Itoa(n), func(b *testing.B) {
			e := newEnv(b, withMemoryLedger())
			msg, work, reply := setup(b, e)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
				if err != nil {
					http.Error(w, "read", http.StatusBadRequest)
					return
				}
				if err := work(body); err != nil {
					http.Error(w, "work", http.StatusInternalServerError)
					return
				}
				w.Header().Set("Content-Type", "application/cbor")
				w.Write(reply)
			}))
			defer srv.Close()
			runLoad(b, srv.URL, n, func(int) []byte { return msg })
		})
	}
}

// BenchmarkHTTPBaseline: a minimal net/http server doing only the
// primitives of an invocation (BenchmarkInvokePrimitives) per request, on
// the same path, with the same client and a reply of the same size.
func BenchmarkHTTPBaseline(b *testing.B) {
	benchHTTPBaseline(b, func(b *testing.B, e *env) ([]byte, func([]byte) error, []byte) {
		work := primitives(b, e)
		return presign(b, e, 1)[0], func([]byte) error { return work() }, make([]byte, 420)
	})
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

// BenchmarkHTTPQueryBaseline: a minimal net/http server doing only the
// primitives of a query per request: canonical CBOR of the message, Ed25519
// verify, the CAP_DECLARE body encoded, Ed25519 sign of a reply of the
// agent's size.
func BenchmarkHTTPQueryBaseline(b *testing.B) {
	benchHTTPBaseline(b, func(b *testing.B, e *env) ([]byte, func([]byte) error, []byte) {
		msg := presignBody(b, e, 1, amp.TypeCapQuery, benchQuery(b))[0]
		// The agent's real answer gives the declare body and reply size.
		raw, err := e.agent.Handle(context.Background(), msg)
		if err != nil {
			b.Fatal(err)
		}
		decl, err := capability.DecodeDeclare(e.receive(e.caller, raw).Body)
		if err != nil {
			b.Fatal(err)
		}
		r, _ := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now})
		m, err := r.Receive(context.Background(), msg)
		if err != nil {
			b.Fatal(err)
		}
		sigInput, pub := m.SigInput(), e.caller.SigningKey.Public().(ed25519.PublicKey)
		sig := make([]byte, len(raw))
		work := func(body []byte) error {
			if _, err := (amp.Limits{}).Canonical(body); err != nil {
				return err
			}
			if !ed25519.Verify(pub, sigInput, m.Sig) {
				return errors.New("verify")
			}
			if _, err := decl.Encode(); err != nil {
				return err
			}
			ed25519.Sign(e.provider.SigningKey, sig)
			return nil
		}
		return msg, work, raw
	})
}
