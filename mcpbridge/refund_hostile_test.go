package mcpbridge

import (
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// stringArgs is a params.arguments object of n string members: n+1 JSON
// values, each of which prompts/get's map[string]string keeps.
func stringArgs(n int) string {
	var b strings.Builder
	b.WriteString("{")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"k%d":"v"`, i)
	}
	return b.String() + "}"
}

// TestEscapedDuplicateMethodKeepsNoItemBudget: the SDK's decoder
// (segmentio, through jsonrpc.DecodeMessage) unescapes member names and
// keeps the last of duplicate members, so a message with "method":
// "tools/call" and then "m\u0065thod":"prompts/get" is a prompts/get,
// whose arguments the SDK decodes into a map; bodyCounter.object compares
// member names as written, reads only the first as "method", and leaves
// the arguments on the item budget (1,048,576 values) instead of
// charging them back to the envelope's 4,096 (threat: the MCP-20 refund
// dodged by a spelling; up to 1 Mi map entries decoded per request).
func TestEscapedDuplicateMethodKeepsNoItemBudget(t *testing.T) {
	args := stringArgs(2 * MaxEnvelopeValues)
	for _, tc := range []struct {
		name, body, sdkMethod string
		refused               bool
	}{
		{"escaped duplicate after", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":` + args + `},"m\u0065thod":"prompts/get"}`, "prompts/get", true},
		{"plain duplicate after", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":` + args + `},"method":"prompts/get"}`, "prompts/get", true},
		{"plain prompts/get", `{"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"x","arguments":` + args + `}}`, "prompts/get", true},
		{"plain tools/call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":` + args + `}}`, "tools/call", false},
	} {
		m, err := jsonrpc.DecodeMessage([]byte(tc.body))
		if err != nil {
			t.Fatalf("%s: the SDK does not decode it: %v", tc.name, err)
		}
		if got := m.(*jsonrpc.Request).Method; got != tc.sdkMethod {
			t.Fatalf("%s: the SDK reads method %q, the test assumed %q", tc.name, got, tc.sdkMethod)
		}
		err = checkBody([]byte(tc.body), 1<<20)
		if tc.refused && (err == nil || !strings.Contains(err.Error(), ErrTooManyValues)) {
			t.Errorf("%s: the SDK decodes a %s with %d argument values; checkBody says %v, want %s",
				tc.name, tc.sdkMethod, 2*MaxEnvelopeValues+1, err, ErrTooManyValues)
		}
		if !tc.refused && err != nil {
			t.Errorf("%s: refused: %v", tc.name, err)
		}
	}
}

// TestEscapedDuplicateMethodReachesTheSDKOverHTTP: the same body, posted
// in a session, passes the endpoint's count and the SDK decodes 8,193
// argument values as a prompts/get (threat: as above, end to end; the
// plain prompts/get is refused 400 before the SDK).
func TestEscapedDuplicateMethodReachesTheSDKOverHTTP(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	args := stringArgs(2 * MaxEnvelopeValues)
	plain := `{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"x","arguments":` + args + `}}`
	escaped := `{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"x","arguments":` + args + `},"m\u0065thod":"prompts/get"}`
	aPlain, sPlain := allocOfSend(t, srv.URL, s.session, plain)
	aEsc, sEsc := allocOfSend(t, srv.URL, s.session, escaped)
	if sPlain != http.StatusRequestEntityTooLarge && sPlain != http.StatusBadRequest {
		t.Fatalf("the plain prompts/get was answered %d; the test assumed a refusal", sPlain)
	}
	if sEsc != sPlain {
		t.Errorf("the escaped-duplicate prompts/get was answered %d (%d bytes allocated), the plain one %d (%d bytes): want the same refusal",
			sEsc, aEsc, sPlain, aPlain)
	}
}

// TestSafeAnswerReadsAResultAtAFewBytesPerByte: safeAnswer runs on every
// 200 answer; answerKind skips the members before "result" by decoding
// each into a json.RawMessage (the decoder's buffer grows by doubling, and
// the value is copied), so an answer whose id is a 4 MiB string (the SDK
// echoes the request's id; the body bound is 4 MiB) costs about six times
// its size on top of the SDK's own, where a 4 MiB result costs next to
// nothing (threat: an answer's cost set by a peer's id; 16 such requests
// in flight per principal).
func TestSafeAnswerReadsAResultAtAFewBytesPerByte(t *testing.T) {
	pad := strings.Repeat("a", 4<<20)
	for _, tc := range []struct{ name, answer string }{
		{"4 MiB result", `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + pad + `"}]}}`},
		{"4 MiB id", `{"jsonrpc":"2.0","id":"` + pad + `","result":{}}`},
	} {
		p := []byte(tc.answer)
		var out []byte
		a := testalloc.Least(func() { out = safeAnswer(p) })
		if string(out) != tc.answer {
			t.Errorf("%s: the answer was changed", tc.name)
		}
		if a > uint64(len(p)) {
			t.Errorf("%s: safeAnswer allocated %d bytes for a %d-byte answer (%.1f per byte), want at most one per byte",
				tc.name, a, len(p), float64(a)/float64(len(p)))
		}
	}
}

// TestSafeAnswerKeepsAnHonestBatch: a batch answer of results and errors
// keeps its order and ids; only the errors' texts change, the results
// are kept as the SDK wrote them (MCP-45).
func TestSafeAnswerKeepsAnHonestBatch(t *testing.T) {
	in := `[{"jsonrpc":"2.0","id":3,"result":{"x":"<b>"}},{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"ECHO","data":"ECHO"}},{"jsonrpc":"2.0","id":1,"result":{}}]`
	out := string(safeAnswer([]byte(in)))
	want := `[{"jsonrpc":"2.0","id":3,"result":{"x":"<b>"}},{"error":{"code":-32602,"message":"invalid params"},"id":"a","jsonrpc":"2.0"},{"jsonrpc":"2.0","id":1,"result":{}}]`
	if out != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

// allowAll is an agent whose policy lets every caller use every tool.
type allowAll struct{ Agent }

func (allowAll) Allows(string, string) bool { return true }

// TestToolsPastTheBoundAreLoggedOncePerGeneration: tools_too_large is
// logged by offered, once per principal whenever its tools are synced,
// where tool_schema_too_large (MCP-31) is logged once per generation for
// all principals: a catalog over MaxToolsBytes writes one Warn line per
// principal per generation (every new principal server, every forced
// Refresh), each the same line (threat: a log flooded by a signed bundle
// and the number of principals; the 2 principals here write 2).
func TestToolsPastTheBoundAreLoggedOncePerGeneration(t *testing.T) {
	const caps, depSize = 20, 900 << 10 // 17.6 MiB of tools: past MaxToolsBytes
	b0, _ := sharedSchemaBridge(t, caps, depSize)
	logs := &logLines{}
	ag := b0.opts.Agent()
	b, err := New(Options{Agent: func() Agent { return allowAll{ag} }, Store: b0.opts.Store,
		Logger: slog.New(slog.NewTextHandler(logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	// What sync does for each principal whose server is made or brought
	// up to date in one generation (b.Server, Refresh); the SDK's AddTool
	// left out, as it costs seconds under -race (it remarshals every
	// schema: about 135 MB allocated per principal here).
	set := b.tools()
	for i := range 2 {
		if got := len(b.offered(fmt.Sprintf("did:web:p%d.example.org", i), set)); got == 0 || got >= caps {
			t.Fatalf("%d of %d tools offered, want some but not all", got, caps)
		}
	}
	if n := logs.count("tools_too_large"); n != 1 {
		t.Errorf("one generation over the bound, 2 principals: tools_too_large logged %d times, want once", n)
	}
}
