package mcpbridge

import (
	"context"
	"encoding/base64"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestBatchAnswerIsNotDecodedAndEncodedAgain: safeAnswer rewrote a batch
// answer by decoding it whole into one copy of each element and, when
// one was an error, encoding the batch again (with the results' HTML
// characters escaped): a batch of two 1 MiB results cost 1 byte per
// answer byte with no error in it and 3.5 with one (threat: up to 16
// tools/call answers of a POST, each up to its capability's largest
// result, copied two to three times more on the way out).
//
// Should: the elements are stepped over in place; an answer with no
// error is the SDK's bytes (nothing allocated), one with an error is
// copied once, each result as written; an answer that is not whole is
// still an internal error.
func TestBatchAnswerIsNotDecodedAndEncodedAgain(t *testing.T) {
	pad := strings.Repeat("<a>", 1<<20/3)
	res := `{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"` + pad + `"}]}}`
	errIn := `{"jsonrpc":"2.0","id":"a","error":{"code":-32602,"message":"ECHO","data":"ECHO"}}`
	errOut := `{"error":{"code":-32602,"message":"invalid params"},"id":"a","jsonrpc":"2.0"}`
	for _, tc := range []struct {
		name, in, want string
		most           int // bytes allocated at most, beyond the answer's
	}{
		{"results", "[" + res + ", " + res + "]\n", "[" + res + ", " + res + "]\n", 0},
		{"results and an error", "[" + res + "," + errIn + "," + res + "]\n", "[" + res + "," + errOut + "," + res + "]\n", 16 << 10},
		{"not whole", "[" + res + "," + res, `{"error":{"code":-32603,"message":"internal error"},"id":null,"jsonrpc":"2.0"}`, 16 << 10},
		{"trailing bytes", "[" + res + "] x", `{"error":{"code":-32603,"message":"internal error"},"id":null,"jsonrpc":"2.0"}`, 16 << 10},
		{"an element not an answer", "[" + res + `,{"jsonrpc":"2.0","id":2}]`, "[" + res + `,{"error":{"code":-32603,"message":"internal error"},"id":null,"jsonrpc":"2.0"}]`, 16 << 10},
		{"empty", "[]", "[]", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := []byte(tc.in)
			var out []byte
			a := testalloc.Least(func() { out = safeAnswer(p) })
			if string(out) != tc.want {
				t.Errorf("got %.120s…, want %.120s…", out, tc.want)
			}
			if most := uint64(tc.most); tc.most > 0 {
				most += uint64(len(p))
				if a > most {
					t.Errorf("safeAnswer allocated %d bytes for a %d-byte answer (%.2f per byte), want at most %d", a, len(p), float64(a)/float64(len(p)), most)
				}
			} else if a > 64<<10 { // the runtime's own, the answer none
				t.Errorf("safeAnswer allocated %d bytes for a %d-byte answer it sends as it is", a, len(p))
			}
		})
	}
}

// TestCallAnswerCopiesItsResultOnlyAsTheSDKNeeds: the bridge turns the
// agent's reply into a tools/call result: the result's JSON (the CBOR
// body cloned while decoded, the value, json.Marshal's buffer and copy,
// the text's string: about 6 bytes per result byte) and the signed
// reply in base64 for _meta. EncodeToString wrote the base64 and then
// copied it into a string, 8.7 bytes allocated per byte of a 1 MiB
// result in all (threat: each answer of a result bounded by its
// capability's largest result costing more than its copies need, on
// top of the SDK's own encoding).
//
// Should: the base64 is written once, into its string (encodeReply: at
// most 1.5 times its length allocated, where EncodeToString made two),
// and the answer's text is the result's JSON. The whole call's bytes per
// result byte (7.4 here, 8.7 before) are logged: other goroutines of the
// process (the bridge's refresh among them) allocate meanwhile, so they
// cannot bound it.
func TestCallAnswerCopiesItsResultOnlyAsTheSDKNeeds(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	text := strings.Repeat("abcd", 1<<18) // 1 MiB
	cb, err := offlineschema.ToCBOR(map[string]any{"text": text})
	if err != nil {
		t.Fatal(err)
	}
	body, err := capability.Result{Status: capability.StatusSuccess, Result: cb}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	reply := make([]byte, len(body)+300) // the signed reply carries the body
	b, err := New(Options{Agent: func() Agent { return signedReplyAgent{replyAgent{Agent: e.agent, body: body}, reply} },
		Store: e.store, Refresh: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	p := &mcp.CallToolParamsRaw{Name: testTool(t), Arguments: []byte(`{"text":"hi","lang":"de"}`)}
	b.call(context.Background(), testPrincipal, p) // the tools, verified once
	var r *mcp.CallToolResult
	a := testalloc.Bytes(func() { r = b.call(context.Background(), testPrincipal, p) })
	want := `{"text":"` + text + `"}`
	if r.IsError || r.Content[0].(*mcp.TextContent).Text != want {
		t.Fatalf("the call's answer is not the result: %.100s", r.Content[0].(*mcp.TextContent).Text)
	}
	if rm := resultMeta(t, r); rm.Reply != base64.StdEncoding.EncodeToString(reply) {
		t.Fatal("_meta's reply is not the signed reply in base64")
	}
	t.Logf("the answer of a %d-byte result allocated %d bytes (%.2f per byte)", len(want), a, float64(a)/float64(len(want)))
	n := base64.StdEncoding.EncodedLen(len(reply))
	if got := testalloc.Least(func() { encodeReply(reply) }); got > uint64(n+n/2) {
		t.Errorf("the signed reply's %d bytes of base64 allocated %d bytes, want at most %d: it is written and then copied", n, got, n+n/2)
	}
}

// signedReplyAgent is a replyAgent whose reply also carries signed
// reply bytes.
type signedReplyAgent struct {
	replyAgent
	reply []byte
}

func (a signedReplyAgent) InvokeLocal(ctx context.Context, call agent.LocalCall) (agent.LocalResult, error) {
	res, err := a.replyAgent.InvokeLocal(ctx, call)
	res.Reply = a.reply
	return res, err
}
