package agent

import (
	"context"
	"testing"
)

// BenchmarkInvokeLocal: one unkeyed local call (an MCP tools/call's cost
// in the agent) of a small capability, in-memory ledger. Reported beside
// time and allocations: receiver-reads/op, the clock reads of the
// agent's receiver per call, which are zero when the agent's fresh reply
// is not verified again (docs/SPEC-DECISIONS.md MCP-14).
func BenchmarkInvokeLocal(b *testing.B) {
	e := newEnv(b, withMemoryLedger())
	n := countingReceiver(b, e)
	call := localTranslate(b, e, "")
	ctx := context.Background()
	if _, err := e.agent.InvokeLocal(ctx, call); err != nil {
		b.Fatal(err)
	}
	n.Store(0)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if _, err := e.agent.InvokeLocal(ctx, call); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(n.Load())/float64(b.N), "receiver-reads/op")
}
