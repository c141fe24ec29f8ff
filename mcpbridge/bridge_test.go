package mcpbridge

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// connect opens a go-sdk client session to the bridge's server of
// principal over in-memory transports; changed gets a value per
// notifications/tools/list_changed.
func connect(t testing.TB, e *env, principal string) (*mcp.ClientSession, chan struct{}) {
	t.Helper()
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go e.bridge.ServeStdio(ctx, principal, st)
	changed := make(chan struct{}, 16)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	cs, err := c.Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, changed
}

func toolNames(t testing.TB, cs *mcp.ClientSession) map[string]*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]*mcp.Tool{}
	for _, tl := range res.Tools {
		out[tl.Name] = tl
	}
	return out
}

func testTool(t *testing.T) string {
	id, _ := capability.ParseID(testCap)
	name, _ := ToolName(id)
	return name
}

func resultMeta(t *testing.T, r *mcp.CallToolResult) ResultMeta {
	t.Helper()
	raw, err := json.Marshal(r.Meta[MetaKey])
	if err != nil {
		t.Fatal(err)
	}
	var rm ResultMeta
	if err := json.Unmarshal(raw, &rm); err != nil {
		t.Fatal(err)
	}
	return rm
}

// TestToolsListOffersOnlyServedAndAllowedVersions: a host must see
// exactly what this agent runs for this caller, each tool pinned to its
// verified schemas (threat: tool poisoning, a schema swapped after
// approval).
func TestToolsListOffersOnlyServedAndAllowedVersions(t *testing.T) {
	db := newStoreFile(t)
	e := newEnv(t, db, agent.Rules{{Caller: testPrincipal, Prefix: "org.example.translate"}})
	cs, _ := connect(t, e, testPrincipal)
	tools := toolNames(t, cs)
	if len(tools) != 1 || tools[testTool(t)] == nil {
		t.Fatalf("tools = %v, want only %s", tools, testTool(t))
	}
	tl := tools[testTool(t)]
	// The output schema has no $ref: listed as stored, byte for byte.
	out, _ := json.Marshal(tl.OutputSchema)
	if !jsonEqual(t, out, sample(t, "translate/capabilities/org.example.translate.text/1.0.0/output.schema.json")) {
		t.Fatalf("outputSchema %s is not the stored schema", out)
	}
	// The input schema $refs two artifacts: embedded under $defs.
	in, _ := json.Marshal(tl.InputSchema)
	var doc map[string]any
	json.Unmarshal(in, &doc)
	defs, _ := doc["$defs"].(map[string]any)
	for _, k := range []string{"ampbundle:schemas/common/text.json", "ampbundle:schemas/common/language.json"} {
		if defs[k] == nil {
			t.Fatalf("inputSchema lacks %s: %s", k, in)
		}
	}
	raw, _ := json.Marshal(tl.Meta[MetaKey])
	var meta ToolMeta
	if err := json.Unmarshal(raw, &meta); err != nil {
		t.Fatal(err)
	}
	if meta.Capability != testCap || meta.BundleID != "org.example.translate" || meta.BundleVersion != 1 ||
		len(meta.InputSchema.Closure) != 3 || len(meta.PublisherKeys) != 1 || !strings.HasPrefix(meta.PublisherKeys[0].DID, "did:key:") {
		t.Fatalf("tool _meta = %s", raw)
	}
	// Another principal, no rule: no tools.
	other, _ := connect(t, e, "did:web:stranger.example.org")
	if n := len(toolNames(t, other)); n != 0 {
		t.Fatalf("an unauthorized principal sees %d tools", n)
	}
}

// TestToolsCallRunsThePipelineAndSignsTheResult: the result a host gets
// is the handler's, validated, and the agent-signed CAP_RESULT proves
// offline what ran.
func TestToolsCallRunsThePipelineAndSignsTheResult(t *testing.T) {
	db := newStoreFile(t)
	e := newEnv(t, db, agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: testTool(t), Arguments: map[string]any{"text": "hi", "lang": "fr"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || e.runs.Load() != 1 {
		t.Fatalf("call: %+v runs %d", r, e.runs.Load())
	}
	sc, _ := json.Marshal(r.StructuredContent)
	if string(sc) != `{"text":"[fr] hi"}` || r.Content[0].(*mcp.TextContent).Text != `{"text":"[fr] hi"}` {
		t.Fatalf("result %s / %+v", sc, r.Content)
	}
	rm := resultMeta(t, r)
	reply, err := base64.StdEncoding.DecodeString(rm.Reply)
	if err != nil || rm.Type != "CAP_RESULT" || rm.Agent != e.agent.DID() {
		t.Fatalf("meta %+v", rm)
	}
	// Verify it as any holder of the agent's did would.
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: time.Now, DIDs: e.store})
	if err != nil {
		t.Fatal(err)
	}
	m, err := recv.Receive(context.Background(), reply)
	if err != nil || m.Type != amp.TypeCapResult || m.From != e.agent.DID() || amp.BareDID(m.To.DIDs[0]) != testPrincipal {
		t.Fatalf("signed reply: %v %+v", err, m)
	}
	res, err := capability.DecodeResult(m.Body)
	if err != nil || res.Status != capability.StatusSuccess {
		t.Fatalf("signed result: %v %+v", err, res)
	}
}

// TestSchemaViolationNeverRunsTheHandler: our own offline validation
// refuses arguments the verified schema does not allow; nothing runs.
func TestSchemaViolationNeverRunsTheHandler(t *testing.T) {
	db := newStoreFile(t)
	e := newEnv(t, db, agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	for _, args := range []any{map[string]any{"text": "hi"}, map[string]any{"text": "hi", "lang": "fr", "x": 1}, nil, []any{1}} {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: testTool(t), Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeSchemaViolation) || rm.Type != "ERROR" || rm.Reply == "" {
			t.Fatalf("args %v: %+v %+v", args, r, rm)
		}
	}
	if n := e.runs.Load(); n != 0 {
		t.Fatalf("the handler ran %d times", n)
	}
}

// TestInvalidResultIsAnErrorNotAnUnvalidatedAnswer: a handler result the
// output schema refuses never reaches the host.
func TestInvalidResultIsAnErrorNotAnUnvalidatedAnswer(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: testTool(t), Arguments: map[string]any{"text": "invalid result", "lang": "fr"}})
	if err != nil {
		t.Fatal(err)
	}
	if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeInternalError) || r.StructuredContent != nil {
		t.Fatalf("%+v %+v", r, rm)
	}
}

// TestRemovedBundleTakesItsToolsAwayLive: a removal reaches live
// sessions (notifications/tools/list_changed) and a call to the removed
// tool is an isError 5002 with zero handler runs (threat: a rug pull
// served from a stale list).
func TestRemovedBundleTakesItsToolsAwayLive(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.bridge.Run(ctx)
	cs, changed := connect(t, e, testPrincipal)
	if len(toolNames(t, cs)) != 1 {
		t.Fatal("no tool before the removal")
	}
	if _, err := e.store.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the removal")
	}
	if n := len(toolNames(t, cs)); n != 0 {
		t.Fatalf("%d tools after the removal", n)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: testTool(t), Arguments: map[string]any{"text": "hi", "lang": "fr"}})
	if err != nil {
		t.Fatal(err)
	}
	if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeUnavailable) || e.runs.Load() != 0 {
		t.Fatalf("call after removal: %+v %+v runs %d", r, rm, e.runs.Load())
	}
	// A verified import brings the tool back, and the session is told
	// (the same version again: a deliberate re-install).
	if _, err := e.store.Import(ctx, bytes.NewReader(sample(t, "translate.ampb")), resolver.ImportOptions{AllowDowngrade: true}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed after the import")
	}
	if tools := toolNames(t, cs); tools[testTool(t)] == nil {
		t.Fatal("the tool is not back after the import")
	}
}

// TestExpiredBundleTakesItsToolsAway: once its bundle expires (by the
// store's clock) a tool is no longer listed and a call is 5002, no run
// (threat: a bundle past its validity still steering hosts).
func TestExpiredBundleTakesItsToolsAway(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().Unix())
	clock := func() time.Time { return time.Unix(now.Load(), 0) }
	db := newStoreFile(t)
	store, err := resolver.Open(db, resolver.Options{Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	e := newEnvOn(t, store, clock, agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	if len(toolNames(t, cs)) != 1 {
		t.Fatal("no tool before the expiry")
	}
	now.Store(time.Date(2036, 1, 1, 0, 0, 1, 0, time.UTC).Unix()) // the sample expires at 2036-01-01
	if n := len(toolNames(t, cs)); n != 0 {
		t.Fatalf("%d tools after the expiry", n)
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: testTool(t), Arguments: map[string]any{"text": "hi", "lang": "fr"}})
	if err != nil {
		t.Fatal(err)
	}
	if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeUnavailable) || e.runs.Load() != 0 {
		t.Fatalf("call after expiry: %+v runs %d", rm, e.runs.Load())
	}
}

// TestTamperedSchemaIsNotListedAndNotRun: bytes altered in the store fail
// their hash: the tool is not listed, and a call is 5002 with no run.
func TestTamperedSchemaIsNotListedAndNotRun(t *testing.T) {
	db := newStoreFile(t)
	tamperFile(t, db, sample(t, "translate/schemas/common/language.json"))
	e := newEnv(t, db, agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	if tools := toolNames(t, cs); tools[testTool(t)] != nil {
		t.Fatal("a tool whose schema closure was tampered with is listed")
	}
	r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: testTool(t), Arguments: map[string]any{"text": "hi", "lang": "fr"}})
	if err != nil {
		t.Fatal(err)
	}
	if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeUnavailable) || e.runs.Load() != 0 {
		t.Fatalf("call of a tampered tool: %+v %+v runs %d", r, rm, e.runs.Load())
	}
}

// TestIdempotencyKeyRunsOnce: MCP request ids are not durable; a host
// retrying with the same idempotency key gets the first outcome, byte
// for byte, and the handler runs once.
func TestIdempotencyKeyRunsOnce(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, testPrincipal)
	call := func(key string) ResultMeta {
		p := &mcp.CallToolParams{Name: testTool(t), Arguments: map[string]any{"text": "hi", "lang": "fr"}}
		if key != "" {
			p.Meta = mcp.Meta{IdempotencyKey: key}
		}
		r, err := cs.CallTool(context.Background(), p)
		if err != nil || r.IsError {
			t.Fatalf("%v %+v", err, r)
		}
		return resultMeta(t, r)
	}
	a, b := call("order-42"), call("order-42")
	if a.Reply != b.Reply || e.runs.Load() != 1 {
		t.Fatalf("same key: replies differ or %d runs", e.runs.Load())
	}
	call("order-43")
	call("")
	call("")
	if n := e.runs.Load(); n != 4 {
		t.Fatalf("%d runs, want 4", n)
	}
	r, _ := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: testTool(t), Arguments: map[string]any{}, Meta: mcp.Meta{IdempotencyKey: 7}})
	if rm := resultMeta(t, r); !r.IsError || rm.Name != "invalid_idempotency_key" {
		t.Fatalf("a non-string key: %+v", rm)
	}
}

// TestUnauthorizedCallRevealsNothing: a principal no rule names gets
// 3001 for a tool that exists and one that does not, and nothing runs.
func TestUnauthorizedCallRevealsNothing(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	cs, _ := connect(t, e, "did:web:stranger.example.org")
	for _, name := range []string{testTool(t), "org.example.nothing.here_1.0.0"} {
		r, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"text": "hi", "lang": "fr"}})
		if err != nil {
			t.Fatal(err)
		}
		if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeUnauthorized) {
			t.Fatalf("%s: %+v", name, rm)
		}
	}
	if e.runs.Load() != 0 {
		t.Fatal("a handler ran for an unauthorized principal")
	}
}

func jsonEqual(t *testing.T, a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	ja, _ := json.Marshal(x)
	jb, _ := json.Marshal(y)
	return string(ja) == string(jb)
}
