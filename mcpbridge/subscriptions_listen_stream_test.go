package mcpbridge

// go-sdk v1.8.0 serves "subscriptions/listen" (SEP-2575, protocol
// 2026-07-28) on the stateful endpoint to a POST that names no protocol
// version (taken as 2025-03-26): the POST is answered as an event stream
// that stays open until the client hangs up, and every other answer of
// its batch goes out on that stream. The endpoint refuses the method
// before the SDK (docs/SPEC-DECISIONS.md MCP-36).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
)

// listenBody is a subscriptions/listen request (id 7).
const listenBody = `{"jsonrpc":"2.0","id":7,"method":"subscriptions/listen","params":{"notifications":{"toolsListChanged":true}}}`

// postOpen posts body in session (no protocol version header) and
// returns the answer's status as soon as its headers came, and its body
// read for up to wait (an event stream stays open: it is read until wait
// passes, then the client hangs up).
func postOpen(t *testing.T, url, token, session, body string, wait time.Duration) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set(sessionHeader, session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if wait == 0 {
		return resp.StatusCode, ""
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
		got <- b
	}()
	select {
	case b := <-got:
		return resp.StatusCode, string(b)
	case <-time.After(wait):
		cancel()
		return resp.StatusCode, string(<-got)
	}
}

// TestListenPOSTsPinEveryRequestSlot: a token holder posts
// subscriptions/listen, which the SDK holds open as an event stream until
// the client hangs up. The POST is counted as a short request
// (MaxInFlight in all, MaxPeerInFlight per principal), not as a
// notification stream (MCP-21), so a few principals each holding their
// share of listens hold every request slot for as long as they like, and
// every other principal's POST, a tools/list included, is 503 busy
// (threat: the starvation MCP-21 closed for GET streams, reopened by a
// POST). The listens were served and the third principal was 503; a
// listen is now refused before the SDK (the tools' notifications come on
// the session's GET stream) and the third principal gets its tools/list.
func TestListenPOSTsPinEveryRequestSlot(t *testing.T) {
	const third, thirdToken = "did:web:third.example.org", "tok-third-0123456789abcdef0123456789"
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	tokens, err := ParseTokenFile([]byte(testPrincipal + " " + testToken + "\n" + otherPrincipal + " " + otherToken + "\n" + third + " " + thirdToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(e.bridge.HTTPHandler(HTTPOptions{Tokens: tokens, MaxInFlight: 2, MaxPeerInFlight: 1}))
	t.Cleanup(ts.Close)
	srv := ts.URL
	a, b, c := open(t, srv, testToken), open(t, srv, otherToken), open(t, srv, thirdToken)
	for _, s := range []struct{ token, session string }{{testToken, a.session}, {otherToken, b.session}} {
		st, _ := postOpen(t, srv, s.token, s.session, listenBody, 0)
		t.Logf("listen POST: %d", st)
	}
	r := send(t, http.MethodPost, srv, thirdToken, c.session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r.status != http.StatusOK {
		t.Fatalf("a third principal's tools/list while two others each hold one listen POST: %d %s", r.status, r.body)
	}
}

// TestListenBatchAnswersAreSentUnrewritten: a batch of
// subscriptions/listen and a tools/call whose name is not a string. The
// listen makes the SDK answer the whole POST as an event stream, which
// the endpoint passes through unread, so the SDK's -32602 for the call,
// quoting its raw params escaped twice over, reaches the client as it
// is (threat: the echo and amplification MCP-22 closed for JSON answers,
// reopened through the stream). The marker came back, each of its
// quotes escaped into seven backslashes; no answer carries the request's
// bytes now.
func TestListenBatchAnswersAreSentUnrewritten(t *testing.T) {
	_, srvT := sessionEnv(t, HTTPOptions{})
	srv := srvT.URL
	a := open(t, srv, testToken)
	marker := strings.Repeat(`ECHOED\"`, 64)
	body := "[" + listenBody + `,{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":{"x":"` + marker + `"}}}]`
	st, got := postOpen(t, srv, testToken, a.session, body, 2*time.Second)
	if strings.Contains(got, "ECHOED") {
		t.Fatalf("the answer (%d, %d bytes for a %d-byte request) carries the request's bytes: %.300q", st, len(got), len(body), got)
	}
}

// TestListenUnderAnySpellingIsRefusedBeforeTheSDK: the method is found
// under every spelling the SDK decodes to "method" and
// "subscriptions/listen" (escapes, the member name's letter case, a
// batch, a duplicate member, a session-opening POST), and only that
// method is refused (threat: a listen hidden from the check by its
// spelling). go-sdk v1.8.0 reads the member name "Method" as no method
// (the message is then a response to it); it is refused all the same,
// as the request id check ignores letter case (MCP-35). Each case has
// its own request id: a listen the SDK holds keeps its id in flight.
func TestListenUnderAnySpellingIsRefusedBeforeTheSDK(t *testing.T) {
	_, srvT := sessionEnv(t, HTTPOptions{})
	srv := srvT.URL
	a := open(t, srv, testToken)
	const params = `,"params":{"notifications":{"toolsListChanged":true}}}`
	n := 0
	for name, c := range map[string]struct {
		session, body string
		refused       bool
	}{
		"plain":                {a.session, listenBody, true},
		"escaped slash":        {a.session, `{"jsonrpc":"2.0","id":7,"method":"subscriptions\/listen"` + params, true},
		"unicode escapes":      {a.session, `{"jsonrpc":"2.0","id":7,"method":"\u0073ubscriptions\u002flisten"` + params, true},
		"escaped member name":  {a.session, `{"jsonrpc":"2.0","id":7,"m\u0065thod":"subscriptions/listen"` + params, true},
		"member name case":     {a.session, `{"jsonrpc":"2.0","id":7,"Method":"subscriptions/listen"` + params, true},
		"last of duplicates":   {a.session, `{"jsonrpc":"2.0","id":7,"method":"ping","method":"subscriptions/listen"` + params, true},
		"in a batch":           {a.session, `[{"jsonrpc":"2.0","id":6,"method":"ping"},` + listenBody + `]`, true},
		"opening a session":    {"", listenBody, true},
		"another method":       {a.session, `{"jsonrpc":"2.0","id":7,"method":"ping"}`, false},
		"method in the params": {a.session, `{"jsonrpc":"2.0","id":7,"method":"ping","params":{"method":"subscriptions/listen"}}`, false},
	} {
		n++
		body := strings.ReplaceAll(c.body, `"id":7`, fmt.Sprintf(`"id":%d`, 100+n))
		st, got := postOpen(t, srv, testToken, c.session, body, time.Second)
		refused := st == http.StatusBadRequest && strings.Contains(got, `"name":"`+ErrMethodNotServed+`"`)
		if refused != c.refused || (!c.refused && st != http.StatusOK) {
			t.Errorf("%s: %d %.200q", name, st, got)
		}
	}
}
