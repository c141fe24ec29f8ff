package mcpbridge

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
)

// BenchmarkToolsListCachedVsReverified: a tools/list of the translate
// sample's tool (in-memory transport, go-sdk client) as it is now, served
// from the generation's verified tools (docs/SPEC-DECISIONS.md MCP-10),
// against the former behaviour, a list preceded by verifying and
// building the tools anew (Refresh(true): the store's hash checks of the
// $ref closure and the tool's JSON), interleaved, b.N times each.
// Reported: cached-µs, reverified-µs and cached/reverified (%).
func BenchmarkToolsListCachedVsReverified(b *testing.B) {
	e := newEnv(b, newStoreFile(b), agent.Rules{{Caller: "*", Prefix: "*"}})
	cs, _ := connect(b, e, testPrincipal)
	var cached, again time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		t := time.Now()
		if len(toolNames(b, cs)) != 1 {
			b.Fatal("the tool is not listed")
		}
		cached += time.Since(t)
		t = time.Now()
		e.bridge.Refresh(true)
		if len(toolNames(b, cs)) != 1 {
			b.Fatal("the tool is not listed")
		}
		again += time.Since(t)
	}
	b.StopTimer()
	b.ReportMetric(float64(cached.Microseconds())/float64(b.N), "cached-µs")
	b.ReportMetric(float64(again.Microseconds())/float64(b.N), "reverified-µs")
	b.ReportMetric(float64(cached)/float64(again)*100, "cached/reverified-%")
}
