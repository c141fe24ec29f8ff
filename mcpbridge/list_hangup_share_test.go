package mcpbridge

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
)

// TestClientWhoHangsUpOnToolsListRunsNoMoreThanItsShare: go-sdk v1.8.0
// answers a request on its session's context, not the POST's: a client
// that posts a tools/list and hangs up gets its in-flight share back at
// once (MCP-18), while the SDK goes on building, encoding and writing the
// answer (up to MaxToolsBytes of tool JSON, encoded twice). MCP-30 bounds
// what outlives the POST for tools/call only; posting and hanging up,
// again and again, ran any number of the principal's other requests at
// once (threat: one token holder spending every core and gigabytes on
// list answers nobody reads). A middleware outside the bridge's holds
// each tools/list answer here, standing for the SDK's work on it after
// the bridge's middleware returned.
func TestClientWhoHangsUpOnToolsListRunsNoMoreThanItsShare(t *testing.T) {
	testToolsListShare(t, false)
}

// TestClientWhoCancelsHungUpToolsListRunsNoMoreThanItsShare: MCP-41
// counted a tools/list until its request's context ended, which go-sdk
// ends on notifications/cancelled before the answer is built: a client
// that posts tools/list, hangs up and cancels it got its slot back at
// once, while the SDK still encoded the answer (up to MaxToolsBytes), and
// held any number of them at once. The slot is now held until the answer
// is marshalled.
func TestClientWhoCancelsHungUpToolsListRunsNoMoreThanItsShare(t *testing.T) {
	testToolsListShare(t, true)
}

// testToolsListShare posts tools/lists of one principal and hangs up on
// each (and, with cancel, sends notifications/cancelled for it), while a
// middleware outside the bridge's holds every answer: at most the
// principal's share are ever held, the rest refused with the busy error,
// and the slots come back once the answers are done with.
func testToolsListShare(t *testing.T, cancel bool) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	tokens, err := ParseTokenFile([]byte(testPrincipal + " " + testToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	const share = 2
	srv := httptest.NewServer(e.bridge.HTTPHandler(HTTPOptions{Tokens: tokens, MaxInFlight: 8, MaxPeerInFlight: share}))
	t.Cleanup(srv.Close)
	release := make(chan struct{})
	releaseAll := sync.OnceFunc(func() { close(release) })
	t.Cleanup(releaseAll) // before the server closes
	var held atomic.Int64
	e.bridge.Server(testPrincipal).AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" && err == nil {
				held.Add(1)
				<-release
			}
			return res, err
		}
	})
	s := open(t, srv.URL, testToken)
	if s.status != http.StatusOK {
		t.Fatalf("session: %d %s", s.status, s.body)
	}
	refused := 0
	deadline := time.Now().Add(20 * time.Second) // a hang guard, not a timing assertion
	for i := 0; i < 4*share; i++ {
		for {
			before := held.Load()
			r, answered := postThenHangUp(t, srv.URL, s.session, `{"jsonrpc":"2.0","id":`+strconv.Itoa(100+i)+`,"method":"tools/list"}`,
				func() bool { return held.Load() > before }, deadline)
			if answered && r.status == http.StatusServiceUnavailable {
				continue // the previous hang-up is not seen yet: the POST share
			}
			if answered {
				if r.status != http.StatusOK || !strings.Contains(r.body, `"code":-32000`) || !strings.Contains(r.body, ErrTooManyRequests) {
					t.Fatalf("list %d answered %d %s, want a JSON-RPC busy error", i, r.status, r.body)
				}
				refused++
			}
			break
		}
		if cancel {
			send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+strconv.Itoa(100+i)+`}}`)
			time.Sleep(20 * time.Millisecond) // the SDK cancels in a goroutine of its own: give it the time to
		}
	}
	if n := held.Load(); n > share {
		t.Fatalf("%d tools/list answers worked on at once for one principal whose share is %d (its clients hung up; cancelled: %v)", n, share, cancel)
	}
	if refused == 0 {
		t.Fatal("no list was refused")
	}
	// Once the answers are done with, their slots come back.
	releaseAll()
	eventually(t, "the slots of the answers done with never came back", func() bool {
		r := send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":900,"method":"tools/list"}`)
		return r.status == http.StatusOK && strings.Contains(r.body, `"result"`)
	})
}

// postThenHangUp posts body in session and waits until the server
// answers (answered) or until held reports true, when it hangs up.
func postThenHangUp(t *testing.T, url, session, body string, held func() bool, deadline time.Time) (reply, bool) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set(sessionHeader, session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			got <- reply{}
			return
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		got <- reply{status: resp.StatusCode, body: string(b)}
	}()
	for {
		select {
		case r := <-got:
			return r, r.status != 0
		default:
		}
		if held() {
			cancel() // the client hangs up
			<-got
			return reply{}, false
		}
		if time.Now().After(deadline) {
			t.Fatal("no answer and nothing held")
		}
		time.Sleep(2 * time.Millisecond)
	}
}
