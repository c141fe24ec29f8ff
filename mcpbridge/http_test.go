package mcpbridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
)

const testToken = "tok-0123456789abcdef0123456789abcdef"

// bearer adds a bearer token to every request.
type bearer struct {
	token string
	base  http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return b.base.RoundTrip(r)
}

func httpEnv(t *testing.T) (*env, *httptest.Server) {
	t.Helper()
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	tokens, err := ParseTokenFile([]byte("# who\n" + testPrincipal + " " + testToken + "\n\ndid:web:other.example.org tok-other-0123456789abcdef0123456789\n"))
	if err != nil || len(tokens) != 2 {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.bridge.HTTPHandler(HTTPOptions{Tokens: tokens, AllowedOrigins: []string{"https://ide.example.org"}, MaxBody: 64 << 10}))
	t.Cleanup(srv.Close)
	return e, srv
}

func post(t *testing.T, url string, hdr map[string]string, body string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`

// TestHTTPIsNeverOpen: without a valid bearer token nothing is served,
// not even initialize (threat: a local web page or another user on the
// machine driving the agent's tools).
func TestHTTPIsNeverOpen(t *testing.T) {
	_, srv := httpEnv(t)
	for _, h := range []map[string]string{nil, {"Authorization": "Bearer wrong-token-0123456789abcdef0123456789"},
		{"Authorization": "Basic " + testToken}, {"Authorization": "Bearer " + testToken[:len(testToken)-1]}} {
		if resp := post(t, srv.URL, h, initBody); resp.StatusCode != http.StatusUnauthorized || resp.Header.Get("WWW-Authenticate") == "" {
			t.Fatalf("%v: %d", h, resp.StatusCode)
		}
	}
	if resp := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + testToken}, initBody); resp.StatusCode != http.StatusOK {
		t.Fatalf("a valid token: %d", resp.StatusCode)
	}
}

// TestHTTPForeignOriginIs403: the MCP transport's DNS-rebinding rule: a
// browser page from another origin is refused before anything else.
func TestHTTPForeignOriginIs403(t *testing.T) {
	_, srv := httpEnv(t)
	auth := "Bearer " + testToken
	for origin, want := range map[string]int{"https://evil.example.com": 403, "null": 403, "http://127.0.0.1": 403, "https://ide.example.org": 200} {
		if resp := post(t, srv.URL, map[string]string{"Authorization": auth, "Origin": origin}, initBody); resp.StatusCode != want {
			t.Fatalf("Origin %s: %d, want %d", origin, resp.StatusCode, want)
		}
	}
}

// TestHTTPBodyOverTheLimitIs413: a peer cannot make the agent hold more
// than the body bound.
func TestHTTPBodyOverTheLimitIs413(t *testing.T) {
	_, srv := httpEnv(t)
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"x":"` + strings.Repeat("a", 70<<10) + `"}}`
	if resp := post(t, srv.URL, map[string]string{"Authorization": "Bearer " + testToken}, big); resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("%d", resp.StatusCode)
	}
}

// TestHTTPGoSDKClientCallsAndSessionsStayWithTheirPrincipal: the go-sdk
// streamable client lists and calls; a session id of one principal used
// with another's token finds no session (threat: session hijack across
// principals).
func TestHTTPGoSDKClientCallsAndSessionsStayWithTheirPrincipal(t *testing.T) {
	e, srv := httpEnv(t)
	ctx := context.Background()
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: res.Tools[0].Name, Arguments: map[string]any{"text": "hi", "lang": "de"}})
	if err != nil || r.IsError || e.runs.Load() != 1 {
		t.Fatalf("%v %+v", err, r)
	}
	if cs.ID() != "" {
		body := `{"jsonrpc":"2.0","id":9,"method":"tools/list","params":{}}`
		resp := post(t, srv.URL, map[string]string{"Authorization": "Bearer tok-other-0123456789abcdef0123456789", "Mcp-Session-Id": cs.ID(),
			"Mcp-Protocol-Version": cs.InitializeResult().ProtocolVersion}, body)
		if resp.StatusCode == http.StatusOK {
			t.Fatal("another principal's token used the session")
		}
	}
	if rm := resultMeta(t, r); rm.Type != "CAP_RESULT" || rm.Code != 0 {
		t.Fatalf("%+v", rm)
	}
}

// TestTokenFileRefusesWeakOrMalformedLines: a short token, a principal
// that is not a DID, a repeated token: the file is refused, naming the
// line only.
func TestTokenFileRefusesWeakOrMalformedLines(t *testing.T) {
	for _, f := range []string{"did:web:a.example short", "not-a-did " + testToken, "did:web:a.example " + testToken + " extra",
		"did:web:a.example " + testToken + "\ndid:web:b.example " + testToken, "did:web:a.example#k " + testToken} {
		_, err := ParseTokenFile([]byte(f))
		if err == nil || amp.NameOf(err) != ErrTokenFile || strings.Contains(err.Error(), testToken) {
			t.Fatalf("%q: %v", f, err)
		}
	}
}

func FuzzParseTokenFile(f *testing.F) {
	f.Add([]byte("did:web:a.example " + testToken + "\n# c\n"))
	f.Add([]byte("\n\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		toks, err := ParseTokenFile(data)
		if err != nil {
			return
		}
		for _, tk := range toks {
			if !amp.ValidDID(tk.Principal) {
				t.Fatalf("principal %q", tk.Principal)
			}
		}
	})
}

// TestHTTPSessionsHearOfRemovals: a host connected over streamable HTTP
// is told (notifications/tools/list_changed) when a removal takes a tool
// away, through the open notification stream.
func TestHTTPSessionsHearOfRemovals(t *testing.T) {
	e, srv := httpEnv(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.bridge.Run(ctx)
	changed := make(chan struct{}, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL,
		HTTPClient: &http.Client{Transport: bearer{testToken, http.DefaultTransport}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.ListTools(ctx, nil); err != nil || len(res.Tools) != 1 {
		t.Fatalf("%v %+v", err, res)
	}
	if _, err := e.store.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed over http")
	}
	if res, err := cs.ListTools(ctx, nil); err != nil || len(res.Tools) != 0 {
		t.Fatalf("after the removal: %v %+v", err, res)
	}
}
