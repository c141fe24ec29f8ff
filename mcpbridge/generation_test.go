package mcpbridge

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestToolsListVerifiesOncePerGeneration: tools/list serves the tools
// verified for the current catalog generation (built once, shared by all
// principals), not a re-verification per request; a removal is a new
// generation, verified again (threat: list requests as a CPU lever
// outside the agent's admission).
func TestToolsListVerifiesOncePerGeneration(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	other, _ := connect(t, e, "did:web:other.example.org")
	first := e.bridge.tools()
	for range 5 {
		if len(toolNames(t, cs)) != 1 || len(toolNames(t, other)) != 1 {
			t.Fatal("the tool is not listed")
		}
	}
	if e.bridge.tools() != first {
		t.Fatal("tools/list rebuilt the verified tools of an unchanged generation")
	}
	if _, err := e.store.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	if n := len(toolNames(t, cs)); n != 0 {
		t.Fatalf("%d tools after the removal", n)
	}
	if e.bridge.tools() == first {
		t.Fatal("a new generation kept the old tools")
	}
}

// crossedStore answers the lookup of one ledger key with another key's
// record: a corrupted or crossed idempotency ledger.
type crossedStore struct {
	*ledger.MemoryStore
	from, to ledger.Key
}

func (s *crossedStore) Lookup(k ledger.Key) (ledger.Record, bool, error) {
	if k == s.to {
		return s.MemoryStore.Lookup(s.from)
	}
	return s.MemoryStore.Lookup(k)
}

// TestCrossedLedgerReplyIsNotHandedOut: a recorded reply that answers
// another call (its reply_to is not this call's id) is refused, 5001
// reply_mismatch, never returned as this call's signed result (threat: a
// corrupted or shared ledger handing one call's result to another).
func TestCrossedLedgerReplyIsNotHandedOut(t *testing.T) {
	id, _ := capability.ParseID(testCap)
	st := &crossedStore{MemoryStore: ledger.NewMemory(ledger.Limits{}),
		from: ledger.Key{Sender: testPrincipal, ID: agent.LocalKeyID(testPrincipal, id, "first")},
		to:   ledger.Key{Sender: testPrincipal, ID: agent.LocalKeyID(testPrincipal, id, "second")}}
	led, err := ledger.New(st, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}}, led)
	cs, _ := connect(t, e, testPrincipal)
	call := func(key string) *mcp.CallToolResult {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: testTool(t), Arguments: map[string]any{"text": "hi", "lang": "fr"},
			Meta: mcp.Meta{IdempotencyKey: key}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	if r := call("first"); r.IsError {
		t.Fatalf("first call: %+v", resultMeta(t, r))
	}
	r := call("second")
	if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeInternalError) || rm.Name != "reply_mismatch" || rm.Reply != "" {
		t.Fatalf("a crossed reply: %+v", rm)
	}
	if n := e.runs.Load(); n != 1 {
		t.Fatalf("handler ran %d times", n)
	}
}
