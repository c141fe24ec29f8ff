package mcpbridge

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
)

// TestIdempotencyKeysTheDecoderMergesAreRefused: a host sends two calls
// under two different idempotency keys, "order-\xff" and "order-\xfe"
// (or, written as JSON escapes, "\ud800" and "\udc00"). The SDK's JSON
// decoder writes U+FFFD for every byte that is not UTF-8 and every lone
// surrogate escape, so both reached the agent as "order-\ufffd": the
// second call got the first's reply and its handler never ran, while
// the host believed it had made two calls. A key holding U+FFFD is now
// refused, 4001 invalid_idempotency_key, and nothing runs (MCP-39).
func TestIdempotencyKeysTheDecoderMergesAreRefused(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	for _, key := range []string{"order-\xff", "order-\xfe", "order-\ufffd"} {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: testTool(t),
			Arguments: map[string]any{"text": "hi", "lang": "fr"}, Meta: mcp.Meta{IdempotencyKey: key}})
		if err != nil {
			t.Fatal(err)
		}
		if rm := resultMeta(t, r); !r.IsError || rm.Name != "invalid_idempotency_key" {
			t.Errorf("key %q: answered %s %q as message %s", key, rm.Type, rm.Name, rm.MessageID)
		}
	}
	if n := e.runs.Load(); n != 0 {
		t.Fatalf("%d runs for calls whose keys the decoder merged, want 0", n)
	}
}
