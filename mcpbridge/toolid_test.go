package mcpbridge

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
)

// TestCallOfForgedToolNameRunsNothing: tools/call resolves a listed tool
// through the tool set's name cache and any other name through
// ParseToolName (threat: a name the cache does not hold — malformed, not
// canonical, or naming a version the agent does not serve — reaching a
// handler, or the cache answering for a name it never listed).
func TestCallOfForgedToolNameRunsNothing(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	e.bridge.tools() // the cache holds the listed tools
	args := json.RawMessage(`{"text":"hi","lang":"fr"}`)
	for _, tc := range []struct {
		tool, name string
	}{
		{"", ErrToolName},
		{"org.example.translate.text", ErrToolName},
		{"org.example.translate.text_01.0.0", ErrToolName},
		{"org.example.translate.text__1.0.0", ErrToolName},
		{"org.example.translate.text_1.0.0_", ErrToolName},
		{"org.example.translate.text_9.9.9", ""}, // well formed, not served
	} {
		r := e.bridge.call(context.Background(), testPrincipal, &mcp.CallToolParamsRaw{Name: tc.tool, Arguments: args})
		rm, _ := r.Meta[MetaKey].(*ResultMeta)
		if !r.IsError || rm == nil || rm.Name == "" || (tc.name != "" && rm.Name != tc.name) {
			t.Fatalf("%q: isError %v meta %+v, want error %q", tc.tool, r.IsError, rm, tc.name)
		}
	}
	if n := e.runs.Load(); n != 0 {
		t.Fatalf("%d handler runs for forged names", n)
	}
	r := e.bridge.call(context.Background(), testPrincipal, &mcp.CallToolParamsRaw{Name: "org.example.translate.text_1.0.0", Arguments: args})
	if r.IsError || e.runs.Load() != 1 {
		t.Fatalf("the listed tool: isError %v, %d runs", r.IsError, e.runs.Load())
	}
}
