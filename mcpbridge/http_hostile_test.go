package mcpbridge

// The HTTP side of the second MCP attacker review: what an
// unauthenticated peer, one principal behind a shared address, a stalled
// body, a body of many small JSON values, a few principals' notification
// streams and the SDK's JSON errors may cost or show
// (docs/SPEC-DECISIONS.md MCP-17 to MCP-22).

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestOnePrincipalsSlowCallsNeverStarveAnotherPrincipalBehindOneAddress:
// authenticated requests are admitted per principal, not per IP address
// (MCP-18): on the default loopback listener every MCP host is one peer,
// and one token holder keeping its share of slow calls in flight must not
// get every other principal 503 busy, even a tools/list (threat: a leaked
// or buggy client's token denying every other client the agent).
func TestOnePrincipalsSlowCallsNeverStarveAnotherPrincipalBehindOneAddress(t *testing.T) {
	s := newSlowEnv(t, HTTPOptions{MaxInFlight: 8, MaxPeerInFlight: 1})
	a, b := open(t, s.srv.URL, testToken), open(t, s.srv.URL, otherToken)
	if a.status != http.StatusOK || b.status != http.StatusOK {
		t.Fatalf("sessions: %d %d", a.status, b.status)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	postAsync(ctx, s.srv.URL, testToken, a.session, callBody(2), nil)
	if n := s.waitRunning(1, 5*time.Second); n != 1 {
		t.Fatalf("the first principal's call never ran (%d)", n)
	}
	r := send(t, http.MethodPost, s.srv.URL, otherToken, b.session, `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r.status != http.StatusOK {
		t.Fatalf("another principal's tools/list while one principal has 1 call in flight (its share): %d %s", r.status, r.body)
	}
}

// TestUnauthenticatedPeerIsAnsweredWithoutWaitingForItsBody: a refusal
// before the body is read (401, 403) closes the connection (MCP-17);
// kept open, net/http would wait to read and discard the declared body
// (up to 256 KiB) before sending the refusal, and a peer without a token
// that declares a body and sends none would hold the connection and its
// goroutine for as long as it liked (serve sets no read timeout past the
// headers) (threat: an unauthenticated slowloris past
// ReadHeaderTimeout). Kept open, the refusal never comes (the test
// server has no read timeout either), so the 20 s wait is a hang guard
// with room for a loaded machine, not a measure of how fast it comes.
func TestUnauthenticatedPeerIsAnsweredWithoutWaitingForItsBody(t *testing.T) {
	_, srv := httpEnv(t)
	cases := map[string]string{
		"no token":       "",
		"wrong token":    "Authorization: Bearer wrong-token-0123456789abcdef0123456789\r\n",
		"foreign origin": "Authorization: Bearer " + testToken + "\r\nOrigin: https://evil.example.com\r\n",
	}
	conns := map[string]net.Conn{}
	for name, hdr := range cases {
		c, err := net.Dial("tcp", srv.Listener.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n%s\r\n{", srv.Listener.Addr(), hdr)
		conns[name] = c
	}
	deadline := time.Now().Add(20 * time.Second)
	for name, c := range conns {
		c.SetReadDeadline(deadline)
		line, err := bufio.NewReader(c).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "HTTP/1.1 40") {
			t.Errorf("%s: no refusal while the declared body is not sent (%q, %v): it waits for the body", name, line, err)
		}
	}
}

// TestSDKJSONErrorsNeverEchoRequestHeaders: the SDK answers some header
// refusals as JSON-RPC errors (application/json) whose message quotes the
// request's Mcp-Protocol-Version or Mcp-Method header; the endpoint
// rewrites them (MCP-22) (threat: reflected content in an error, MCP-12).
func TestSDKJSONErrorsNeverEchoRequestHeaders(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	const marker = "ECHO-5c1d"
	s := open(t, srv.URL, testToken)
	for name, c := range map[string]struct {
		body string
		hdr  map[string]string
	}{
		"protocol version of a call": {callBody(5), map[string]string{"Mcp-Protocol-Version": "9-" + marker}},
		"method header of a notification": {`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": marker}},
	} {
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set(sessionHeader, s.session)
		for k, v := range c.hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		if strings.Contains(string(b), marker) {
			t.Errorf("%s: the answer quotes the request's header: %d %s", name, resp.StatusCode, b)
		}
	}
}

// deadlineListener records the read deadlines set on its connections
// that lie in the future (net/http's own, without timeouts configured,
// are zero or in the past).
type deadlineListener struct {
	net.Listener
	future *atomic.Int64
}

func (l deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return deadlineConn{c, l.future}, nil
}

type deadlineConn struct {
	net.Conn
	future *atomic.Int64
}

func (c deadlineConn) SetReadDeadline(t time.Time) error {
	if t.After(time.Now()) {
		c.future.Add(1)
	}
	return c.Conn.SetReadDeadline(t)
}

// TestStalledBodyOfACallerGetsADataDeadline: as the AMP binding does,
// the MCP endpoint gives a declared body FrameGrace + n / MinDataRate to
// arrive (a read deadline through http.ResponseController,
// transport.NewRateReader; MCP-19), so that a token holder that declares
// bodies and sends a byte cannot hold its share for ever (serve sets only
// ReadHeaderTimeout) (threat: a slowloris past the headers).
func TestStalledBodyOfACallerGetsADataDeadline(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: testPrincipal, Prefix: "*"}})
	tokens, err := ParseTokenFile([]byte(testPrincipal + " " + testToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(e.bridge.HTTPHandler(HTTPOptions{Tokens: tokens}))
	future := &atomic.Int64{}
	srv.Listener = deadlineListener{srv.Listener, future}
	srv.Start()
	t.Cleanup(srv.Close)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{",
		srv.Listener.Addr(), testToken)
	time.Sleep(300 * time.Millisecond) // the handler is reading the body
	if future.Load() == 0 {
		t.Fatal("a body declared at 100000 bytes and stalled after one is read with no deadline")
	}
}

// TestFewPrincipalsCannotHoldEveryNotificationStream: open notification
// streams (GET, held for hours) are capped at one per session,
// MaxPeerInFlight (16) per principal and MaxSessions (1024) in all, not at
// MaxInFlight (64), the cap of short POSTs (MCP-21): four token holders
// must not keep every stream, leaving every other host's GET 503, so
// that it never hears tools/list_changed (a revoked or removed tool
// stays in its list) (threat: notification starvation by a few
// principals).
func TestFewPrincipalsCannotHoldEveryNotificationStream(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	var file strings.Builder
	tok := func(i int) string { return fmt.Sprintf("tok-%d-0123456789abcdef0123456789abcdef", i) }
	for i := range 5 {
		fmt.Fprintf(&file, "did:web:p%d.example.org %s\n", i, tok(i))
	}
	tokens, err := ParseTokenFile([]byte(file.String()))
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.bridge.HTTPHandler(HTTPOptions{Tokens: tokens}))
	t.Cleanup(srv.Close)
	for p := range 4 {
		for range 16 {
			s := open(t, srv.URL, tok(p))
			if st := stream(t, srv.URL, tok(p), s.session); st != http.StatusOK {
				t.Fatalf("principal %d's stream: %d", p, st)
			}
		}
	}
	late := open(t, srv.URL, tok(4))
	if late.status != http.StatusOK {
		t.Fatalf("the fifth principal's session: %d", late.status)
	}
	if st := stream(t, srv.URL, tok(4), late.session); st != http.StatusOK {
		t.Fatalf("the fifth principal's only notification stream, with 65 of 1024 sessions live: %d", st)
	}
}

// TestRequestOfManySmallJSONValuesCostsBoundedMemory: the endpoint
// charges a POST its body bytes (MaxInFlightBytes), but the go-sdk
// decodes a request's params and _meta several times into maps before
// any handler (MCP-16: five decodes): a ping whose _meta holds 256 KiB of
// small members cost about 80 bytes per body byte, so the 64 MiB of
// bodies the endpoint admits at once could cost about 5 GB; its values
// are counted first (MCP-20) (threat: an authenticated caller's bodies of
// tiny values, A2A-9's rule for cards, not applied before the SDK).
func TestRequestOfManySmallJSONValuesCostsBoundedMemory(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	var members strings.Builder
	for i := 0; members.Len() < 256<<10; i++ {
		fmt.Fprintf(&members, `"%x":0,`, i)
	}
	body := `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{` + strings.TrimSuffix(members.String(), ",") + `}}}`
	var status int // the least of three pings: other goroutines allocate too
	alloc := testalloc.Least(func() { status = send(t, http.MethodPost, srv.URL, testToken, s.session, body).status })
	perByte := float64(alloc) / float64(len(body))
	t.Logf("%.1f bytes allocated per body byte (answered %d)", perByte, status)
	if perByte > 16 {
		t.Fatalf("a %d-byte ping of small _meta members (answered %d) allocated %d bytes: %.0f per body byte, want at most 16",
			len(body), status, alloc, perByte)
	}
}

// TestStalledBodyIsCutOffAndItsShareGivenBack: a token holder that
// declares a body and stops sending is cut off once the grace passes
// (transport.RateReader's stall and rate bounds), and the request slot
// and bytes it held are free again for the principal's next request
// (threat: a stalled body holding a principal's whole share for ever).
func TestStalledBodyIsCutOffAndItsShareGivenBack(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{MaxInFlight: 4, MaxPeerInFlight: 1, grace: 100 * time.Millisecond})
	s := open(t, srv.URL, testToken)
	c, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprintf(c, "POST / HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\n%s: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{",
		srv.Listener.Addr(), testToken, sessionHeader, s.session)
	c.SetReadDeadline(time.Now().Add(4 * time.Second))
	if _, err := io.Copy(io.Discard, c); err != nil {
		t.Fatalf("the stalled request's connection was not closed: %v", err)
	}
	eventually(t, "the principal's share stays held after its stalled body was cut off", func() bool {
		return send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":9,"method":"ping"}`).status == http.StatusOK
	})
}

// rpcError is a JSON-RPC error answer.
type rpcError struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   struct {
		Code    int64           `json:"code"`
		Message string          `json:"message"`
		Data    json.RawMessage `json:"data"`
	} `json:"error"`
}

// TestSDKJSONErrorKeepsItsIDAndCodeNotItsText: a JSON-RPC error the SDK
// answers with a 4xx status is rewritten, not dropped: the status, the
// request's id and the error code stay (a host still matches the answer
// to its call), the message is the code's fixed text and data is gone
// (threat: reflected content in an error, MCP-12, without breaking the
// host's error handling).
func TestSDKJSONErrorKeepsItsIDAndCodeNotItsText(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL, strings.NewReader(callBody(77)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(sessionHeader, s.session)
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28") // refused by a stateful server, as JSON-RPC
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e rpcError
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	if err := json.Unmarshal(b, &e); err != nil || resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("want a 400 JSON-RPC error, got %d %q (%v)", resp.StatusCode, b, err)
	}
	if e.JSONRPC != "2.0" || string(e.ID) != "77" || e.Error.Code != -32022 || e.Error.Message != "unsupported protocol version" || e.Error.Data != nil {
		t.Fatalf("the rewritten error: %s", b)
	}
}

// TestSecondStreamOfOneSessionIsRefused: a session has one notification
// stream; a second GET for it is 409 at once, before the SDK, and the
// first stays (threat: one session's streams filling its principal's
// share).
func TestSecondStreamOfOneSessionIsRefused(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	if st := stream(t, srv.URL, testToken, s.session); st != http.StatusOK {
		t.Fatalf("first stream: %d", st)
	}
	if st := stream(t, srv.URL, testToken, s.session); st != http.StatusConflict {
		t.Fatalf("a second stream of one session: %d, want 409", st)
	}
	other := open(t, srv.URL, testToken)
	if st := stream(t, srv.URL, testToken, other.session); st != http.StatusOK {
		t.Fatalf("another session's stream: %d", st)
	}
}

// TestBodyOfManyValuesIsRefusedBeforeTheSDKWhileLargeArgumentsPass: a
// body is refused at once, 413 too_many_json_values, when what the SDK
// decodes into maps (_meta, the envelope) holds more than
// MaxEnvelopeValues values; a tools/call whose arguments hold more (under
// the agent's item budget) still reaches the tool; a body nested past
// MaxBodyDepth is 413 json_too_deep (threat: the SDK's decodes of many
// small values, without refusing what the agent accepts).
func TestBodyOfManyValuesIsRefusedBeforeTheSDKWhileLargeArgumentsPass(t *testing.T) {
	_, srv := sessionEnv(t, HTTPOptions{})
	s := open(t, srv.URL, testToken)
	many := strings.TrimSuffix(strings.Repeat("0,", MaxEnvelopeValues+1), ",")
	deep := strings.Repeat("[", MaxBodyDepth) + strings.Repeat("]", MaxBodyDepth)
	for name, c := range map[string]struct {
		body   string
		status int
		err    string
	}{
		"many values in _meta": {`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"x":[` + many + `]}}}`, http.StatusRequestEntityTooLarge, ErrTooManyValues},
		"many values in arguments": {`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"org.example.translate.text_1.0.0","arguments":{"text":"hi","lang":"de","pad":[` + many + `]}}}`,
			http.StatusOK, ""},
		"nested past the bound": {`{"jsonrpc":"2.0","id":5,"method":"ping","params":{"_meta":{"x":` + deep + `}}}`, http.StatusRequestEntityTooLarge, ErrTooDeep},
	} {
		r := send(t, http.MethodPost, srv.URL, testToken, s.session, c.body)
		var e struct{ Error struct{ Name string } }
		json.Unmarshal([]byte(r.body), &e)
		if r.status != c.status || e.Error.Name != c.err {
			t.Errorf("%s: %d %q, want %d %q", name, r.status, r.body, c.status, c.err)
		}
	}
}
