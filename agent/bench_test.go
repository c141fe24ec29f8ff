package agent

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

// benchParams is a small, realistic invocation (~60-byte params).
var benchParams = map[string]any{"code": "func main() { println(\"hello\") }", "language": "go"}

// presign builds n distinct signed CAP_INVOKE messages (the client's work,
// kept out of the timings). Their timestamps advance by 50 µs each, as real
// traffic's do (ids, and so replay keys, grow with time); the agent's clock
// is then set to the last one.
func presign(b *testing.B, e *env, n int) [][]byte {
	b.Helper()
	return presignBody(b, e, n, amp.TypeCapInvoke, invokeBody(b, "org.agentries.code-review:2.1.0", benchParams))
}

// presignBody is presign for any message type and body.
func presignBody(b *testing.B, e *env, n int, typ amp.Type, body []byte) [][]byte {
	b.Helper()
	sendClock := &clock{t: e.clock.Now()}
	s, err := amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: sendClock.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer func() { e.clock.t = sendClock.Now() }()
	out := make([][]byte, n)
	for i := range out {
		sendClock.Add(50 * time.Microsecond)
		_, m, err := s.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(e.provider.DID), Body: body})
		if err != nil {
			b.Fatal(err)
		}
		out[i] = m
	}
	return out
}

func noop(ctx context.Context, p any) (any, error) {
	return map[string]any{"issues": []any{}, "version": "noop"}, nil
}

// BenchmarkInvokeInProcess: one signed CAP_INVOKE handled by the agent:
// strict decode, envelope checks, did:key, signature, policy, negotiation,
// verified input schema, a no-op handler, output schema, encoding and
// signing of the CAP_RESULT. Ledger in memory (durability is measured by
// BenchmarkIdempotency*). The handler honours its context, so it runs
// inline (Config.InlineHandlers). Compare with BenchmarkInvokePrimitives
// (target, docs/PERFORMANCE.md: >= 85 %).
func BenchmarkInvokeInProcess(b *testing.B) { benchInvokeInProcess(b, true) }

// BenchmarkInvokeInProcessDetached is BenchmarkInvokeInProcess with the
// handler on a goroutine of its own (the default, for handlers that may
// ignore their context).
func BenchmarkInvokeInProcessDetached(b *testing.B) { benchInvokeInProcess(b, false) }

func benchInvokeInProcess(b *testing.B, inline bool) {
	e := newEnv(b, withHandler("org.agentries.code-review:2.1.0", noop), withMemoryLedger(),
		withConfig(func(c *Config) { c.InlineHandlers = inline }))
	msgs := presign(b, e, b.N)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if _, err := e.agent.Handle(ctx, msgs[i]); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// BenchmarkInvokePrimitives: the primitives an invocation cannot avoid,
// done directly on the same message: canonical CBOR of the message, Ed25519
// verify of the request, schema validation of the params and of the result
// (both required), CBOR encoding of the result and Ed25519 signature of the
// reply.
func BenchmarkInvokePrimitives(b *testing.B) {
	e := newEnv(b)
	work := primitives(b, e)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := cpuTime()
	for i := 0; i < b.N; i++ {
		if err := work(); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, cpu)
}

// primitives returns the work of BenchmarkInvokePrimitives on one presigned
// message; it is safe for concurrent use.
func primitives(b *testing.B, e *env) func() error {
	b.Helper()
	msgs := presign(b, e, 1)
	r, _ := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now})
	m, err := r.Receive(context.Background(), msgs[0])
	if err != nil {
		b.Fatal(err)
	}
	sigInput := m.SigInput()
	pub := e.caller.SigningKey.Public().(ed25519.PublicKey)
	cat, _ := e.store.Catalog()
	entry, _ := cat.Lookup(capability.ID{Name: "org.agentries.code-review", Version: mustVersion(b, "2.1.0")})
	sch, err := e.store.Schema(entry.Descriptor.InputSchema)
	if err != nil {
		b.Fatal(err)
	}
	outSch, err := e.store.Schema(entry.Descriptor.OutputSchema)
	if err != nil {
		b.Fatal(err)
	}
	inv, _ := capability.DecodeInvoke(m.Body)
	reply := make([]byte, 420)
	return func() error {
		if _, err := (amp.Limits{}).Canonical(msgs[0]); err != nil {
			return err
		}
		if !ed25519.Verify(pub, sigInput, m.Sig) {
			return errors.New("verify")
		}
		v, err := offlineschema.ValueFromCBOR(inv.Params)
		if err != nil {
			return err
		}
		if err := sch.Validate(v); err != nil {
			return err
		}
		result := map[string]any{"issues": []any{}, "version": "noop"}
		if err := outSch.Validate(result); err != nil {
			return err
		}
		if _, err := amp.Marshal(map[string]any{"status": "success", "result": result}); err != nil {
			return err
		}
		ed25519.Sign(e.provider.SigningKey, reply)
		return nil
	}
}

// benchIdempotency runs signed CAP_INVOKEs from 64 concurrent callers.
func benchIdempotency(b *testing.B, opts ...envOption) {
	e := newEnv(b, append([]envOption{withHandler("org.agentries.code-review:2.1.0", noop)}, opts...)...)
	msgs := presign(b, e, b.N)
	var next atomic.Int64
	ctx := context.Background()
	b.SetParallelism(64 / runtime.GOMAXPROCS(0))
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	defer reportCPU(b, start)
	if w, ok := e.agent.Ledger().Store().(*ledger.WALStore); ok {
		groups := w.Groups()
		defer func() { b.ReportMetric(float64(w.Groups()-groups)/float64(b.N), "groups/op") }()
	}
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1) - 1
			if _, err := e.agent.Handle(ctx, msgs[i]); err != nil {
				b.Error(err)
				return
			}
		}
	})
}

// BenchmarkIdempotencyDurable: the durable ledger (the agent's default:
// the write-ahead log beside the store, one fdatasync per group), 64
// callers.
func BenchmarkIdempotencyDurable(b *testing.B) { benchIdempotency(b) }

// BenchmarkIdempotencyMemory: the same, non-durable (the reference:
// durable >= 90 % of this).
func BenchmarkIdempotencyMemory(b *testing.B) { benchIdempotency(b, withMemoryLedger()) }
