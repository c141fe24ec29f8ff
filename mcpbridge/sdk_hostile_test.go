package mcpbridge

// The HTTP endpoint's bounds against what go-sdk v1.8.0 really does with
// a body the counter accepts (a batch of tiny messages, arguments of a
// method that is not tools/call: MCP-20, MCP-23) and with params it cannot
// decode (quoted whole in a 200 JSON-RPC error: MCP-22), and the body's
// read deadline against a call that outlasts it (MCP-19).

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/resolver"
)

// batchOf is a JSON-RPC batch of n messages msg(i).
func batchOf(n int, msg func(i int) string) string {
	var b strings.Builder
	b.WriteString("[")
	for i := range n {
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString(msg(i))
	}
	return b.String() + "]"
}

// allocOfSend is the bytes allocated (client and server: one process)
// while body is posted in session once, and the status.
func allocOfSend(t *testing.T, url, session, body string) (uint64, int) {
	t.Helper()
	var status int
	a := testalloc.Bytes(func() { status = send(t, http.MethodPost, url, testToken, session, body).status })
	return a, status
}

// TestBatchOfTinyMessagesIsBoundedBeforeTheSDKDecodesEach: a batch
// (accepted without a protocol version header, MCP-30) of the smallest
// messages passes checkBody's envelope bound (a notification is 3
// values: 1,365 fit in 4,096; a ping 4: 1,023), but the SDK decodes each
// message several times (readBatch, DecodeMessage, the method, _meta),
// and each segmentio decode allocates a buffer of its own: about 66 KB
// per message, so one 75 KB POST costs about 90 MB, some 1,200 bytes
// per body byte where MCP-20 holds the envelope to 16, and as much as
// 600 single requests (threat: the per-value count missing the
// per-message cost; an authenticated caller's 64 such POSTs in flight).
// A batch should cost at most 32 single messages: the principal's share
// of requests in flight (16) with room to spare.
func TestBatchOfTinyMessagesIsBoundedBeforeTheSDKDecodesEach(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	for name, msg := range map[string]func(i int) string{
		"notifications": func(int) string { return `{"jsonrpc":"2.0","method":"notifications/initialized"}` },
		"pings":         func(i int) string { return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"ping"}`, 100+i) },
	} {
		one := uint64(0)
		for i := range 3 { // the largest of three: the first may warm caches
			a, _ := allocOfSend(t, srv.URL, s.session, msg(1000+i))
			one = max(one, a)
		}
		// Each message is one value per member and one for itself; the
		// batch is one more.
		n := (MaxEnvelopeValues - 1) / (strings.Count(msg(0), `":`) + 1)
		body := batchOf(n, msg)
		var status int // the least of three posts: other goroutines allocate too
		alloc := testalloc.Least(func() { status = send(t, http.MethodPost, srv.URL, testToken, s.session, body).status })
		if alloc > 32*one {
			t.Errorf("%s: a batch of %d messages, %d bytes (answered %d), allocated %d bytes: %.0f times one message (%d bytes, %.0f per body byte), want at most 32",
				name, n, len(body), status, alloc, float64(alloc)/float64(one), one, float64(alloc)/float64(len(body)))
		}
	}
}

// postWhole posts body in session and returns the status and the whole
// answer (at most 64 MiB).
func postWhole(t *testing.T, url, session, body string) (int, []byte) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(sessionHeader, session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, b
}

// TestUndecodableParamsAreNeitherEchoedNorAmplified: params the SDK
// cannot decode into the method's type (a tools/call whose name is not a
// string, a ping whose _meta is not an object) are answered, 200, with a
// JSON-RPC -32602 whose message quotes the raw params ("unmarshaling %q
// into a *mcp.CallToolParamsRaw", then the decoder's own quote of the
// rest): the SDK builds it before the bridge's middleware, so
// safeRPCError never sees it, and safeWriter rewrites 4xx errors only
// (MCP-22). Each quote escapes again: 2 MiB of `\"` come back as 8 MiB,
// after some 145 MB of allocation (threat: reflected peer input, MCP-12;
// an answer four times the body, past every bound MCP-20 set).
func TestUndecodableParamsAreNeitherEchoedNorAmplified(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	const marker = "ECHO-7f3a"
	pad := strings.Repeat(`\"`, 1<<20)
	for name, body := range map[string]string{
		"tools/call name not a string": `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":["` + marker + `"]}}`,
		"ping _meta not an object":     `{"jsonrpc":"2.0","id":8,"method":"ping","params":{"_meta":["` + marker + `"]}}`,
		"batch item":                   `[{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":1,"x":"` + marker + `"}}]`,
		"padded":                       `{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":1,"x":"` + marker + pad + `"}}`,
	} {
		status, b := postWhole(t, srv.URL, s.session, body)
		if strings.Contains(string(b), marker) {
			t.Errorf("%s: the answer (%d, %d bytes) quotes the request's params: %.160q", name, status, len(b), b)
		}
		if len(b) > 4096 {
			t.Errorf("%s: a %d-byte request is answered with %d bytes", name, len(body), len(b))
		}
	}
}

// TestNonCallArgumentsTheSDKDecodesIntoMapsGetTheEnvelopeBound: checkBody
// charges params.arguments to the agent's item budget (262,144) for any
// method, on the ground that the SDK keeps tools/call arguments as raw
// bytes (MCP-20); but prompts/get's arguments are a map[string]string the
// SDK decodes before any handler (the bridge offers no prompts, and the
// SDK still decodes them, then answers -32602), and member names are not
// charged: 200,000 members decode into a map, some 34 bytes per body
// byte, where the same members in _meta are refused at 4,096 (threat:
// the envelope's bound stepped round by naming the member "arguments").
func TestNonCallArgumentsTheSDKDecodesIntoMapsGetTheEnvelopeBound(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	var members strings.Builder
	for i := range MaxEnvelopeValues + 1 {
		fmt.Fprintf(&members, `,"%x":""`, i)
	}
	args := "{" + strings.TrimPrefix(members.String(), ",") + "}"
	for name, c := range map[string]struct {
		body   string
		status int
		err    string
	}{
		"prompts/get arguments": {`{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p","arguments":` + args + `}}`,
			http.StatusRequestEntityTooLarge, ErrTooManyValues},
		"prompts/get arguments in a batch": {`[{"jsonrpc":"2.0","id":6,"method":"prompts/get","params":{"name":"p","arguments":` + args + `}}]`,
			http.StatusRequestEntityTooLarge, ErrTooManyValues},
		"tools/call arguments (the budget's own)": {`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"org.example.translate.text_1.0.0","arguments":` +
			strings.TrimSuffix(args, "}") + `,"text":"hi","lang":"de"}}}`, http.StatusOK, ""},
	} {
		r := send(t, http.MethodPost, srv.URL, testToken, s.session, c.body)
		var e struct{ Error struct{ Name string } }
		json.Unmarshal([]byte(r.body), &e)
		if r.status != c.status || e.Error.Name != c.err {
			t.Errorf("%s: %d %.120q, want %d %q", name, r.status, r.body, c.status, c.err)
		}
	}
}

// TestCallThatOutlastsTheBodyDeadlineIsStillAnswered: readBody reads a
// POST's body through transport.RateReader, which moves the connection's
// read deadline after every read that brings bytes, the last included;
// net/http clears the deadline when that last read hits the body's end
// (it starts its background read then), and the RateReader sets it again
// right after. The background read then times out once the body's data
// deadline passes (admission.FrameGrace, 5 s, plus the bytes at
// MinDataRate: grace here), net/http cancels the request, and the SDK
// returns without the answer: a tools/call that takes longer than that is
// answered 200 with an empty body while its handler runs to its end
// (threat: every honest host's call of a tool slower than about 5 s lost
// over HTTP, its side effects done, a retry running it again).
func TestCallThatOutlastsTheBodyDeadlineIsStillAnswered(t *testing.T) {
	store, err := resolver.Open(newStoreFile(t), resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	id := amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
	slow := func(ctx context.Context, params any) (any, error) {
		select {
		case <-time.After(600 * time.Millisecond): // 6 times the grace below
		case <-ctx.Done():
		}
		return map[string]any{"text": "done"}, nil
	}
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: id, Store: store, Policy: agent.Rules{{Caller: "*", Prefix: "*"}},
		Now: time.Now, Rand: rand.Reader, Handlers: map[string]agent.Handler{testCap: slow}, InlineHandlers: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := New(Options{Agent: func() Agent { return a }, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := ParseTokenFile([]byte(testPrincipal + " " + testToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(b.HTTPHandler(HTTPOptions{Tokens: tokens, grace: 100 * time.Millisecond}))
	t.Cleanup(srv.Close)
	s := open(t, srv.URL, testToken)
	r := send(t, http.MethodPost, srv.URL, testToken, s.session, callBody(3))
	var res struct {
		ID     int `json:"id"`
		Result struct {
			IsError bool `json:"isError"`
			Content []struct{ Text string }
		} `json:"result"`
	}
	if err := json.Unmarshal([]byte(r.body), &res); err != nil || r.status != http.StatusOK || res.ID != 3 || res.Result.IsError ||
		len(res.Result.Content) != 1 || !strings.Contains(res.Result.Content[0].Text, "done") {
		t.Fatalf("a call whose handler takes 600 ms, its body read within a 100 ms grace: %d %.160q, want its result", r.status, r.body)
	}
}
