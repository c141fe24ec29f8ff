package agent

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestBridgedResultTheCallersSchemaRefusesIsNeverSent: a bridge's output
// side renames a member the provider's schema leaves untyped into one the
// caller's schema types (the build-time check proves removals only): a
// handler result valid for the provider becomes, bridged, a result the
// caller's version forbids. It is refused, 5001 invalid_result, never sent
// as a success (COMPAT-13); a result that bridges into a valid one is
// still served.
func TestBridgedResultTheCallersSchemaRefusesIsNeverSent(t *testing.T) {
	const looseOut2 = `{"type":"object","required":["translated_text"],"properties":{"translated_text":{},"detected_formality":{"type":"string"}},"additionalProperties":false}`
	for _, c := range []struct {
		name    string
		text    any
		success bool
	}{
		{"a number where the caller's version has a string", 5, false},
		{"a string, as the caller's version has it", "Hallo", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var runs atomic.Int64
			e := newEnv(t, func(e *env) {
				e.importBundle(bridgeBundleWith(t, seedKey(21), looseOut2))
				e.handlers["org.agentries.translate-v:2.0.0"] = func(context.Context, any) (any, error) {
					runs.Add(1)
					return map[string]any{"translated_text": c.text}, nil
				}
			})
			_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.translate-v:1.0.0", map[string]any{"text": "Hallo", "lang": "en"}))
			if runs.Load() != 1 {
				t.Fatalf("the handler ran %d times, want 1", runs.Load())
			}
			r := resultOf(t, reply)
			if c.success {
				var out map[string]any
				if r.Status != capability.StatusSuccess || amp.Unmarshal(r.Result, &out) != nil || out["translation"] != "Hallo" {
					t.Fatalf("status %s result %v, want the bridged translation", r.Status, out)
				}
				return
			}
			if r.Status == capability.StatusSuccess || r.Error == nil || r.Error.Code != amp.CodeInternalError || r.Error.Name != "invalid_result" {
				t.Fatalf("status %s error %+v: a result the caller's schema refuses was answered", r.Status, r.Error)
			}
		})
	}
}
