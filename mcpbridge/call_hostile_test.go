package mcpbridge

// The call side of the second MCP attacker review: what a tools/call may
// cost (its arguments against the item budget, the calls one principal
// runs at once, a refused principal's answer) and what one tool holds.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestCallerWhoHangsUpStillHoldsItsShareWhileItsCallRuns: the HTTP
// admission (MaxPeerInFlight) is released when the POST's client goes
// away, but the SDK runs tools/call on the session's context, not the
// request's, and the agent then runs the claimed handler to its end: a
// client that posts a slow call and hangs up, again and again, runs any
// number of handlers at once past its share (threat: the in-flight bound
// of MCP-7 not bounding the calls it is there to bound).
func TestCallerWhoHangsUpStillHoldsItsShareWhileItsCallRuns(t *testing.T) {
	s := newSlowEnv(t, HTTPOptions{MaxInFlight: 8, MaxPeerInFlight: 1})
	a := open(t, s.srv.URL, testToken)
	for i := range 8 {
		ctx, cancel := context.WithCancel(context.Background())
		got := postAsync(ctx, s.srv.URL, testToken, a.session, callBody(10+i), nil)
		s.waitRunning(int64(i+1), 200*time.Millisecond)
		cancel() // the client hangs up
		<-got
		time.Sleep(10 * time.Millisecond) // the server notices
	}
	if n := s.running.Load(); n > 1 {
		t.Fatalf("%d handlers run at once for one caller whose share is 1 request in flight", n)
	}
}

// TestBatchOfCallsInOnePOSTCountsEachCall: a POST whose protocol version
// header is absent (taken as 2025-03-26) may carry a JSON-RPC batch; the
// SDK runs each tools/call of it at once, while the endpoint counts one
// request against the peer's share (threat: one request, within the body
// bound, running hundreds of handlers).
func TestBatchOfCallsInOnePOSTCountsEachCall(t *testing.T) {
	s := newSlowEnv(t, HTTPOptions{MaxInFlight: 8, MaxPeerInFlight: 1})
	a := open(t, s.srv.URL, testToken)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	postAsync(ctx, s.srv.URL, testToken, a.session, "["+callBody(20)+","+callBody(21)+","+callBody(22)+"]", nil)
	if n := s.waitRunning(2, time.Second); n > 1 {
		t.Fatalf("one POST of a batch of 3 calls runs %d handlers at once; the peer's share is 1", n)
	}
}

// padArgs is a tools/call's arguments with n zeros beside the valid
// ones, in arrays of 4096 (under amp's 65,536 items per array).
func padArgs(n int) []byte {
	row := "[" + strings.Repeat("0,", 4095) + "0]"
	rows := make([]string, n/4096)
	for i := range rows {
		rows[i] = row
	}
	return []byte(`{"text":"hi","lang":"de","pad":[` + strings.Join(rows, ",") + `]}`)
}

// allocOfCall is the bytes b.call allocates for arguments args (the least
// of testalloc.Runs calls, each refused the same way), and whether it ran
// the handler.
func allocOfCall(t *testing.T, e *env, args []byte) uint64 {
	t.Helper()
	p := &mcp.CallToolParamsRaw{Name: testTool(t), Arguments: args}
	refused := true
	a := testalloc.Least(func() {
		r := e.bridge.call(context.Background(), testPrincipal, p)
		refused = refused && r.IsError
	})
	if !refused || e.runs.Load() != 0 {
		t.Fatalf("arguments of %d bytes with a pad the schema refuses were run", len(args))
	}
	return a
}

// TestCallArgumentsAreBoundedByTheItemBudgetWhileParsed: the arguments of
// a tools/call are parsed into a tree (offlineschema.ValueFromJSON, whose
// node bound is the byte bound) and encoded to CBOR before the agent's
// item budget (Config.MaxParamItems, 2^18) refuses them: the parse costs
// about 115 bytes per argument byte ("0," is two bytes and one item), so
// a refused call's cost grows with its body, past the budget (threat: an
// authenticated caller's 4 MiB bodies, each about 480 MB to refuse, 16
// in flight; the AMP binding decodes its CBOR params under the budget;
// A2A-9's rule for cards).
func TestCallArgumentsAreBoundedByTheItemBudgetWhileParsed(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	e.bridge.call(context.Background(), testPrincipal, &mcp.CallToolParamsRaw{Name: testTool(t), Arguments: []byte(`{"text":"hi","lang":"de"}`)})
	e.runs.Store(0)
	small, big := offlineschema.DefaultMaxItems/8, 2*offlineschema.DefaultMaxItems
	as, ab := allocOfCall(t, e, padArgs(small)), allocOfCall(t, e, padArgs(big))
	if ratio := float64(ab) / float64(as); ratio > 12 { // 16 times the items; the budget is 8 times small
		t.Fatalf("refusing %d items allocated %d bytes, %d items %d bytes: %.1f times as much, past a budget of %d items",
			big, ab, small, as, ratio, offlineschema.DefaultMaxItems)
	}
}

// TestSharedSchemaArtifactIsNotCopiedIntoEveryTool: a signed bundle of
// many capabilities whose input schemas $ref one large artifact gets that
// artifact embedded whole in every tool's compound document (MCP-2), kept
// twice per tool (the document and its print) for the generation and
// sent by every tools/list: memory and answers grow with capabilities ×
// artifact, not with the bundle (threat: a publisher-signed bundle of
// 100 KiB holding tens of MiB of the agent, and a tools/list answer as
// large; nothing bounds a tool's rendered schema).
func TestSharedSchemaArtifactIsNotCopiedIntoEveryTool(t *testing.T) {
	const caps, depSize = 64, 16 << 10
	b, bundleLen := sharedSchemaBridge(t, caps, depSize)
	// What the tools hold: each rendering once (tools share it), and
	// each tool's print.
	held, docs := 0, map[*sharedSchema]bool{}
	specs := b.tools().specs
	for _, s := range specs {
		in, ok := s.tool.InputSchema.(*sharedSchema)
		if !ok {
			t.Fatalf("tool %s: the input schema is a %T, not a shared rendering", s.tool.Name, s.tool.InputSchema)
		}
		out, _ := s.tool.OutputSchema.(*sharedSchema)
		for _, sch := range []*sharedSchema{in, out} {
			if sch != nil && !docs[sch] {
				docs[sch] = true
				held += len(sch.doc)
			}
		}
		held += len(s.print)
	}
	if enc, _ := json.Marshal(specs[0].tool); !bytes.Contains(enc, []byte(strings.Repeat("x", depSize))) {
		t.Fatal("a tool's listed input schema does not carry the artifact it $refs")
	}
	if len(specs) != caps {
		t.Fatalf("%d tools, want %d", len(specs), caps)
	}
	if ratio := float64(held) / float64(bundleLen); ratio > 4 {
		t.Fatalf("a signed bundle of %d bytes (%d capabilities, one %d-byte artifact they share) is held as %d bytes of tools: %.0f times the bundle",
			bundleLen, caps, depSize, held, ratio)
	}
}

// TestListOfToolsNamingOneLargeSchemaIsBounded: tools that name one
// schema share its rendering in memory, but tools/list writes it once per
// tool; a signed bundle of many capabilities naming one schema near the
// 1 MiB bound of a tool would make every list answer hundreds of
// megabytes (threat: one small signed bundle, an amplified answer to each
// tools/list of every principal). The tools one principal is offered are
// bounded by MaxToolsBytes as tools/list writes them (MCP-34).
func TestListOfToolsNamingOneLargeSchemaIsBounded(t *testing.T) {
	const caps, depSize = 24, 900 << 10 // 24 tools of about 0.9 MiB: 21 MiB
	b, _ := sharedSchemaBridge(t, caps, depSize)
	ct, st := mcp.NewInMemoryTransports()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go b.ServeStdio(ctx, testPrincipal, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(enc) > MaxToolsBytes+64<<10 || len(res.Tools) == 0 || len(res.Tools) >= caps {
		t.Fatalf("tools/list of %d tools naming one %d-byte schema: %d tools in %d bytes, want some but not all, within about %d bytes",
			caps, depSize, len(res.Tools), len(enc), MaxToolsBytes)
	}
}

// sharedSchemaBridge is a bridge over a signed bundle of caps
// capabilities whose input schemas all reach one depSize-byte schema
// artifact through $ref, every one allowed to testPrincipal; and the
// bundle's length.
func sharedSchemaBridge(t *testing.T, caps, depSize int) (b *Bridge, bundleLen int) {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	dep := []byte(`{"type":"string","description":"` + strings.Repeat("x", depSize) + `"}`)
	d := &bundle.Draft{BundleID: "org.hostile", Version: 1, CreatedAt: time.Now().Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("in.json", bundle.MediaTypeSchema, []byte(`{"type":"object","properties":{"a":{"$ref":"dep.json"}}}`)),
			bundle.BytesSource("dep.json", bundle.MediaTypeSchema, dep),
			bundle.BytesSource("out.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))}}
	for i := range caps {
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: fmt.Sprintf("org.hostile.t%d", i), Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "in.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "out.json"}})
	}
	return signedBridge(t, d, nil)
}

// TestUnauthorizedPrincipalGets3001ForAnyToolName: MCP-3 (RFC 004 A.9)
// says a principal the policy does not allow gets 3001 for any tool name;
// call parses the name first, so a name that is not a tool name is 4001
// invalid_tool_name and a well-formed one 3001: the answer depends on the
// request, not only on the caller (threat: a refused caller probing the
// bridge, a contract broken).
func TestUnauthorizedPrincipalGets3001ForAnyToolName(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	for _, name := range []string{"not a tool", strings.Repeat("a", 200), "org.example.translate.text_1.0.0", "org.unknown_9.9.9"} {
		r := e.bridge.call(context.Background(), "did:web:stranger.example.org", &mcp.CallToolParamsRaw{Name: name})
		if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeUnauthorized) {
			t.Errorf("tool name %.20q: code %d %s, want 3001 for a caller the policy refuses", name, rm.Code, rm.Name)
		}
	}
}

// blockingAgent serves testCap to everyone; its InvokeLocal counts its
// calls and holds each until release closes.
type blockingAgent struct {
	entered chan struct{}
	release chan struct{}
}

func (a *blockingAgent) InvokeLocal(ctx context.Context, call agent.LocalCall) (agent.LocalResult, error) {
	a.entered <- struct{}{}
	<-a.release
	return agent.LocalResult{}, amp.Named(amp.CodeUnavailable, "closed", "done")
}

func (a *blockingAgent) Served() []capability.ID {
	id, _ := capability.ParseID(testCap)
	return []capability.ID{id}
}
func (a *blockingAgent) Allows(caller, name string) bool { return true }
func (a *blockingAgent) DID() string                     { return "did:web:agent.example.org" }

// TestCallPastThePrincipalsShareIsRefusedAtOnce: a principal running
// MaxPrincipalCalls calls has its next one refused at once (3005
// too_many_calls, nothing run, nothing queued), another principal is not
// held up by it, and a slot comes back when its InvokeLocal returns
// (threat: calls that outlive their requests, or a batch's items, running
// past the principal's share; MCP-30).
func TestCallPastThePrincipalsShareIsRefusedAtOnce(t *testing.T) {
	ag := &blockingAgent{entered: make(chan struct{}, 8), release: make(chan struct{})}
	b, err := New(Options{Agent: func() Agent { return ag }, Store: &resolver.Store{}, MaxPrincipalCalls: 2})
	if err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParamsRaw{Name: "org.example.translate.text_1.0.0", Arguments: []byte(`{"text":"hi","lang":"de"}`)}
	done := make(chan *mcp.CallToolResult, 3)
	for _, who := range []string{testPrincipal, testPrincipal, otherPrincipal} {
		go func() { done <- b.call(context.Background(), who, p) }()
		<-ag.entered
	}
	r := b.call(context.Background(), testPrincipal, p)
	if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeRateLimited) || rm.Name != ErrTooManyCalls {
		t.Fatalf("a third call of a principal whose share is 2: code %d %s, want 3005 %s", rm.Code, rm.Name, ErrTooManyCalls)
	}
	if len(ag.entered) != 0 {
		t.Fatal("the refused call reached the agent")
	}
	ag.release <- struct{}{} // one call of testPrincipal returns
	<-done
	go func() { done <- b.call(context.Background(), testPrincipal, p) }()
	select {
	case <-ag.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the slot of a call whose InvokeLocal returned was not given back")
	}
	close(ag.release)
	for range 3 {
		<-done
	}
}

// nodes counts the values of a parsed JSON tree: every scalar, array and
// object one.
func nodes(v any) int {
	n := 1
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			n += nodes(e)
		}
	case map[string]any:
		for _, e := range x {
			n += nodes(e)
		}
	}
	return n
}

// checkCountIsTheBudgets: for arguments the parser takes, checkArgs
// charges exactly the item count the agent's CBOR budget charges: both
// pass a budget of that many items and not one less.
func checkCountIsTheBudgets(t *testing.T, doc []byte) {
	v, err := offlineschema.ValueFromJSON(doc)
	if err != nil {
		return
	}
	c := &bodyCounter{s: doc, args: math.MaxInt, maxDepth: MaxBodyDepth}
	if err := c.text(roleArgs); amp.NameOf(err) == ErrTooDeep {
		return // refused before the parse, whatever its count
	} else if err != nil {
		t.Fatalf("checkArgs refuses %.60q, which the parser takes: %v", doc, err)
	}
	n := math.MaxInt - c.args
	if want := nodes(v); n != want {
		t.Fatalf("checkArgs counts %d values in %.60q, the parsed tree has %d", n, doc, want)
	}
	if err := checkArgs(doc, n); err != nil {
		t.Fatalf("%.60q: %d values refused by checkArgs with a budget of %d: %v", doc, n, n, err)
	}
	if err := checkArgs(doc, n-1); amp.NameOf(err) != ErrTooManyValues {
		t.Fatalf("%.60q: %d values, checkArgs with a budget of %d: %v, want %s", doc, n, n-1, err, ErrTooManyValues)
	}
	enc, err := offlineschema.ToCBOR(v)
	if err != nil {
		return
	}
	if _, err := offlineschema.ValueFromCBORBudget(enc, n); err != nil {
		t.Fatalf("%.60q: %d values refused by a budget of %d items: %v", doc, n, n, err)
	}
	if _, err := offlineschema.ValueFromCBORBudget(enc, n-1); n > 1 && amp.NameOf(err) != offlineschema.ErrLimitExceeded {
		t.Fatalf("%.60q: %d values, a budget of %d items: %v, want limit_exceeded", doc, n, n-1, err)
	}
}

var jsonValuesSeeds = []string{
	`{}`, `[]`, `0`, `-1.5e+10`, `"a"`, `true`, `false`, `null`,
	`{"text":"hi","lang":"de"}`,
	`{"a:b":"c:d","e":[1,-2,3.0e-1,true,false,null,"x\"y:",{}],"f":{"g":{"h":[]}}}`,
	` { "k" : [ 1 , 2 ] , "n" : null } `,
	`{"\\":"\\\\","\"":"\u0022:"}`,
	`[[[[[1e5]]]],"tfn",-0]`,
}

// TestJSONValuesCountsAsTheItemBudget: the count that refuses arguments
// before they are parsed is the agent's own item count (threat: a call
// the AMP binding would take refused, or one it would refuse parsed).
func TestJSONValuesCountsAsTheItemBudget(t *testing.T) {
	for _, s := range jsonValuesSeeds {
		checkCountIsTheBudgets(t, []byte(s))
	}
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	e.bridge.opts.MaxParamItems = 3 // the object, text and lang
	for args, code := range map[string]amp.Code{`{"text":"hi","lang":"de"}`: 0, `{"text":"hi","lang":"de","x":1}`: amp.CodeInvalidMessage} {
		r := e.bridge.call(context.Background(), testPrincipal, &mcp.CallToolParamsRaw{Name: testTool(t), Arguments: []byte(args)})
		if rm := resultMeta(t, r); rm.Code != uint16(code) || (code != 0 && rm.Name != string(offlineschema.ErrLimitExceeded)) {
			t.Errorf("arguments %s under a budget of 3 items: code %d %s, want %d", args, rm.Code, rm.Name, code)
		}
	}
}

// FuzzJSONValues: checkArgs never panics, and agrees with the parser
// and the CBOR budget on every document the parser takes.
func FuzzJSONValues(f *testing.F) {
	for _, s := range jsonValuesSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, doc []byte) {
		checkCountIsTheBudgets(t, doc)
	})
}

// TestCallShareIsOnlyEverLowered: an endpoint's share lowers the
// bridge's call share and never raises it (threat: a second endpoint, or
// a zero option, lifting the bound another set; MCP-30).
func TestCallShareIsOnlyEverLowered(t *testing.T) {
	b, err := New(Options{Agent: func() Agent { return &blockingAgent{} }, Store: &resolver.Store{}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ share, want int64 }{{0, 16}, {4, 4}, {8, 4}, {-1, 4}, {1, 1}} {
		b.shareCalls(int(c.share))
		if got := b.calls.share.Load(); got != c.want {
			t.Fatalf("after shareCalls(%d) the share is %d, want %d", c.share, got, c.want)
		}
	}
}

// TestToolWhoseSchemasRenderPastTheBoundIsNotOffered: a signed input
// schema that renders to more than MaxToolSchema is not offered, logged
// once per generation by name (threat: one capability's schema making
// every tools/list answer megabytes; MCP-31).
func TestToolWhoseSchemasRenderPastTheBoundIsNotOffered(t *testing.T) {
	logs := &logLines{}
	b := hostileEnv(t, []byte(`{"type":"object","description":"`+strings.Repeat("x", MaxToolSchema)+`"}`), logs)
	b.tools()
	if specs := b.tools().specs; len(specs) != 0 {
		t.Fatalf("a tool whose input schema renders past %d bytes is offered", MaxToolSchema)
	}
	if n := logs.count(ErrToolSchemaTooLarge); n != 1 {
		t.Fatalf("%s logged %d times, want once", ErrToolSchemaTooLarge, n)
	}
}
