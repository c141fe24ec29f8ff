package mcpbridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
)

const otherPrincipal = "did:web:other.example.org"
const otherToken = "tok-other-0123456789abcdef0123456789"

// sessionEnv serves the bridge's HTTP endpoint with o (two principals'
// tokens, testToken and otherToken).
func sessionEnv(t *testing.T, o HTTPOptions) (*HTTPEndpoint, *httptest.Server) {
	t.Helper()
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	tokens, err := ParseTokenFile([]byte(testPrincipal + " " + testToken + "\n" + otherPrincipal + " " + otherToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	o.Tokens = tokens
	h := e.bridge.HTTPHandler(o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return h, srv
}

// reply is one HTTP answer, its body read.
type reply struct {
	status  int
	session string
	header  http.Header
	body    string
}

// send makes one MCP request with token (and session, when not empty).
func send(t *testing.T, method, url, token, session, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(method, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	if session != "" {
		req.Header.Set(sessionHeader, session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return reply{resp.StatusCode, resp.Header.Get(sessionHeader), resp.Header, string(b)}
}

// open initializes a session and says initialized (a used session).
func open(t *testing.T, url, token string) reply {
	t.Helper()
	r := send(t, http.MethodPost, url, token, "", initBody)
	if r.status == http.StatusOK {
		send(t, http.MethodPost, url, token, r.session, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	}
	return r
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(10 * time.Second); !cond(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			t.Fatal(what)
		}
	}
}

// refusedForSessions checks a session refusal: status, Retry-After and a
// JSON-RPC error naming too_many_sessions.
func refusedForSessions(t *testing.T, r reply, status int) {
	t.Helper()
	var body struct {
		JSONRPC string
		Error   struct {
			Code int
			Data struct{ Name string }
		}
	}
	if r.status != status || r.header.Get("Retry-After") == "" || json.Unmarshal([]byte(r.body), &body) != nil ||
		body.JSONRPC != "2.0" || body.Error.Code != -32000 || body.Error.Data.Name != ErrTooManySessions {
		t.Fatalf("want a retryable %d JSON-RPC too_many_sessions, got %d %q", status, r.status, r.body)
	}
}

// TestSessionFloodFromOnePrincipalIsRefused: one token holder opening
// sessions without end (each an SDK session with its goroutines, kept
// until it times out) is refused, retryably, at the per-principal cap
// (default 64) (threat: a leaked token or a buggy client pinning memory).
func TestSessionFloodFromOnePrincipalIsRefused(t *testing.T) {
	h, srv := sessionEnv(t, HTTPOptions{})
	for i := 0; i < 1500; i++ {
		r := send(t, http.MethodPost, srv.URL, testToken, "", initBody)
		if r.status == http.StatusOK {
			continue
		}
		refusedForSessions(t, r, http.StatusTooManyRequests)
		if i != 64 {
			t.Fatalf("refused at the %dth session, want the 65th", i+1)
		}
		if s := h.Stats(); s.Sessions != 64 || s.Refused != 1 {
			t.Fatalf("stats %+v", s)
		}
		return
	}
	t.Fatal("1500 sessions of one principal accepted")
}

// TestSessionCapsInAllAndPerPrincipal: the caps hold per principal (429)
// and in all (503); a closed session frees its slot and is counted
// (threat: many principals together exhausting the process).
func TestSessionCapsInAllAndPerPrincipal(t *testing.T) {
	h, srv := sessionEnv(t, HTTPOptions{MaxSessions: 3, MaxPrincipalSessions: 2})
	a1 := open(t, srv.URL, testToken)
	a2 := open(t, srv.URL, testToken)
	if a1.status != 200 || a2.status != 200 {
		t.Fatalf("%d %d", a1.status, a2.status)
	}
	refusedForSessions(t, open(t, srv.URL, testToken), http.StatusTooManyRequests)
	if b1 := open(t, srv.URL, otherToken); b1.status != 200 {
		t.Fatalf("other principal: %d", b1.status)
	}
	refusedForSessions(t, open(t, srv.URL, otherToken), http.StatusServiceUnavailable)
	if r := send(t, http.MethodDelete, srv.URL, testToken, a1.session, ""); r.status != http.StatusNoContent {
		t.Fatalf("delete: %d", r.status)
	}
	eventually(t, "the closed session is never uncounted", func() bool { return h.Stats().Closed == 1 })
	if b2 := open(t, srv.URL, otherToken); b2.status != 200 {
		t.Fatalf("after a close: %d %s", b2.status, b2.body)
	}
	if s := h.Stats(); s.Sessions != 3 || s.Opened != 4 || s.Refused != 2 {
		t.Fatalf("stats %+v", s)
	}
}

// TestUnusedSessionIsClosedEarly: a session nobody uses after its
// initialize ends after FreshSessionTimeout, not SessionTimeout; a used
// one stays (threat: fire-and-forget initializes holding the cap).
func TestUnusedSessionIsClosedEarly(t *testing.T) {
	h, srv := sessionEnv(t, HTTPOptions{FreshSessionTimeout: 50 * time.Millisecond})
	unused := send(t, http.MethodPost, srv.URL, testToken, "", initBody)
	used := open(t, srv.URL, testToken)
	eventually(t, "the unused session is never closed", func() bool { return h.Stats().Closed == 1 })
	if r := send(t, http.MethodPost, srv.URL, testToken, unused.session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.status != http.StatusNotFound {
		t.Fatalf("unused session: %d", r.status)
	}
	time.Sleep(100 * time.Millisecond) // past the fresh timeout
	if r := send(t, http.MethodPost, srv.URL, testToken, used.session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`); r.status != http.StatusOK {
		t.Fatalf("used session: %d %s", r.status, r.body)
	}
}

// TestIdlePrincipalsAreEvictedLeastRecentlyUsed: principals (client
// certificates name any number) hold a server only while used: with
// room for one, a second waits while the first has a session, and takes
// its place once it has none (threat: a CA-signed certificate per
// request growing the process without bound).
func TestIdlePrincipalsAreEvictedLeastRecentlyUsed(t *testing.T) {
	h, srv := sessionEnv(t, HTTPOptions{MaxPrincipals: 1})
	a := open(t, srv.URL, testToken)
	if r := open(t, srv.URL, otherToken); r.status != http.StatusServiceUnavailable || !strings.Contains(r.body, `"busy"`) {
		t.Fatalf("no room: %d %s", r.status, r.body)
	}
	send(t, http.MethodDelete, srv.URL, testToken, a.session, "")
	eventually(t, "the session is never uncounted", func() bool { return h.Stats().Sessions == 0 })
	if r := open(t, srv.URL, otherToken); r.status != http.StatusOK {
		t.Fatalf("after the first principal went idle: %d %s", r.status, r.body)
	}
	if s := h.Stats(); s.Evicted != 1 || s.Principals != 1 {
		t.Fatalf("stats %+v", s)
	}
}

// TestReloadedTokensReplaceTheOldOnes: after SetTokens (a reloaded token
// file) a removed token is 401 and a new one works (threat: a revoked
// token working until a restart).
func TestReloadedTokensReplaceTheOldOnes(t *testing.T) {
	h, srv := sessionEnv(t, HTTPOptions{})
	fresh, err := ParseTokenFile([]byte(testPrincipal + " tok-fresh-0123456789abcdef0123456789\n"))
	if err != nil {
		t.Fatal(err)
	}
	h.SetTokens(fresh)
	if r := send(t, http.MethodPost, srv.URL, testToken, "", initBody); r.status != http.StatusUnauthorized {
		t.Fatalf("old token: %d", r.status)
	}
	if r := send(t, http.MethodPost, srv.URL, "tok-fresh-0123456789abcdef0123456789", "", initBody); r.status != http.StatusOK {
		t.Fatalf("new token: %d", r.status)
	}
}

// TestSDKErrorsNeverEchoTheRequest: the SDK's plain-text refusals quote
// the request (a malformed payload, a Host header); the endpoint answers
// a JSON error naming the status only (threat: reflected content in an
// error, log or terminal injection).
func TestSDKErrorsNeverEchoTheRequest(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	const marker = "ECHO-7f3a"
	s := open(t, srv.URL, testToken)
	for name, mk := range map[string]func() *http.Request{
		"malformed payload": func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(`{"jsonrpc":"2.0","id":3,"method":"`+marker+`",`))
			r.Header.Set(sessionHeader, s.session)
			return r
		},
		"host header": func() *http.Request {
			r, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initBody))
			r.Host = marker + ".example.org"
			return r
		},
		"last event id": func() *http.Request {
			r, _ := http.NewRequest(http.MethodGet, srv.URL, nil)
			r.Header.Set(sessionHeader, s.session)
			r.Header.Set("Last-Event-ID", marker)
			return r
		},
	} {
		req := mk()
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		resp, err := http.DefaultClient.Do(req.WithContext(ctx))
		if err != nil {
			cancel()
			t.Fatal(name, err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		cancel()
		if resp.StatusCode < 400 || strings.Contains(string(b), marker) || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: %d %s %q", name, resp.StatusCode, resp.Header.Get("Content-Type"), b)
		}
	}
}

// stream opens a notification stream (GET) of a session; the stream stays
// open until the test ends.
func stream(t *testing.T, url, token, session string) int {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(sessionHeader, session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp.StatusCode
}

// TestNotificationStreamsAreBoundedPerPrincipal: open GET streams are
// bounded per principal, not per IP address: one principal's streams
// never crowd out another's behind the same address (a proxy, a NAT),
// and one principal cannot hold more than its share (threat: a token
// holder pinning every stream slot).
func TestNotificationStreamsAreBoundedPerPrincipal(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{MaxInFlight: 8, MaxPeerInFlight: 1})
	a1, a2 := open(t, srv.URL, testToken), open(t, srv.URL, testToken)
	b := open(t, srv.URL, otherToken)
	if st := stream(t, srv.URL, testToken, a1.session); st != http.StatusOK {
		t.Fatalf("first stream: %d", st)
	}
	if st := stream(t, srv.URL, otherToken, b.session); st != http.StatusOK {
		t.Fatalf("another principal's stream from the same address: %d", st)
	}
	if st := stream(t, srv.URL, testToken, a2.session); st != http.StatusServiceUnavailable {
		t.Fatalf("a principal's stream over its share: %d", st)
	}
}
