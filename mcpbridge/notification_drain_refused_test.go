package mcpbridge

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// protocolVersionHeader is the streamable HTTP transport's protocol
// version header.
const protocolVersionHeader = "Mcp-Protocol-Version"

// progressNote is a notification the tests below hold the handler of.
const progressNote = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`

// sendHeaders is send (POST, testToken, session) with extra headers.
func sendHeaders(t *testing.T, url, session string, hdr map[string]string, body string) reply {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Authorization", "Bearer "+testToken)
	req.Header.Set(sessionHeader, session)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return reply{}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	return reply{resp.StatusCode, resp.Header.Get(sessionHeader), resp.Header, string(b)}
}

// holdProgress holds the principal's handler of notifications/progress
// until release is called (at the latest when the test ends); handled
// counts the notifications it was handed.
func holdProgress(t *testing.T, h *HTTPEndpoint) (handled *atomic.Int64, release func()) {
	t.Helper()
	gate := make(chan struct{})
	var once sync.Once
	release = func() { once.Do(func() { close(gate) }) }
	t.Cleanup(release)
	handled = new(atomic.Int64)
	h.b.Server(testPrincipal).AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/progress" {
				handled.Add(1)
				<-gate // a slow notification handler
			}
			return next(ctx, method, req)
		}
	})
	return handled, release
}

// errorName is the name of a JSON error body (jsonError).
func errorName(body string) string {
	var e struct{ Error struct{ Name string } }
	json.Unmarshal([]byte(body), &e)
	return e.Error.Name
}

// TestNotificationsUnderAVersionTheDrainPingIsRefusedUnderAreBounded
// (MCP-57): the drain of MCP-54 posted its ping with the client's
// Mcp-Protocol-Version. go-sdk v1.8.0 queues a notification under any
// version from 2026-07-28 on (any string sorting after it, with an
// Mcp-Method header), but refuses a call under it at once on a stateful
// endpoint (mcp/streamable.go, servePOST; the ping, without Mcp-Method,
// at validateMcpHeaders): the drain ended with the refusal and the
// POST's slot came back, its notification queued. With the session's
// handler held, 9 of 10 such POSTs were answered 202 at once, before
// this change; now none is while it is held (two held, the share, the
// others busy), and once it goes on the two held are answered 202 and
// the session serves on. Time is only a hang guard.
func TestNotificationsUnderAVersionTheDrainPingIsRefusedUnderAreBounded(t *testing.T) {
	for _, version := range []string{"2026-07-28", "2099-01-01", "zz"} {
		t.Run(version, func(t *testing.T) {
			const share, posts = 2, 10
			h, srv := sessionEnv(t, HTTPOptions{MaxPeerInFlight: share, MaxInFlight: 8})
			s := open(t, srv.URL, testToken)
			if s.status != http.StatusOK {
				t.Fatalf("initialize: %d %s", s.status, s.body)
			}
			handled, release := holdProgress(t, h)
			hdr := map[string]string{protocolVersionHeader: version, "Mcp-Method": "notifications/progress"}
			statuses := make(chan int, posts+1)
			post := func() { statuses <- sendHeaders(t, srv.URL, s.session, hdr, progressNote).status }
			go post()
			eventually(t, "the first notification was never handled", func() bool { return handled.Load() == 1 })
			for range posts {
				go post()
			}
			accepted, busy := 0, 0
			for end := time.After(10 * time.Second); accepted+busy < posts+1-share; {
				select {
				case st := <-statuses:
					switch st {
					case http.StatusAccepted:
						accepted++
					case http.StatusServiceUnavailable:
						busy++
					default:
						t.Fatalf("a notification POST answered %d", st)
					}
				case <-end:
					t.Fatalf("%d accepted, %d busy: POSTs neither answered nor refused", accepted, busy)
				}
			}
			if accepted > 0 {
				t.Fatalf("with the session's handler held, %d notification POSTs under version %q were accepted (202) and their notifications queued; %d refused", accepted, version, busy)
			}
			release()
			for range share {
				select {
				case st := <-statuses:
					if st != http.StatusAccepted {
						t.Fatalf("a held notification POST answered %d once handled", st)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("a held notification POST was never answered")
				}
			}
			if r := send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":9,"method":"ping"}`); r.status != http.StatusOK {
				t.Fatalf("ping after: %d %s", r.status, r.body)
			}
		})
	}
}

// TestANotificationItsSessionNeverHandlesClosesTheSession (MCP-56): the
// drain of MCP-54 gave the POST's slot back at its timeout (30 s), the
// ping unanswered and the notification still queued: a session whose
// handling stalls (here the handler held; the wait ended once it is,
// HTTPOptions.drainCut) had its notification POSTs answered 202, one slot-timeout
// each, their notifications queued without bound. Now the session is
// closed instead: the POST holds its slot until the session's
// connection is done (its queue handled), and is then answered 404
// notifications_unhandled; the session is gone, and the principal's
// slot serves a new one.
func TestANotificationItsSessionNeverHandlesClosesTheSession(t *testing.T) {
	cut := make(chan struct{})
	h, srv := sessionEnv(t, HTTPOptions{MaxPeerInFlight: 1, MaxInFlight: 8, drainCut: cut})
	s := open(t, srv.URL, testToken)
	if s.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", s.status, s.body)
	}
	handled, release := holdProgress(t, h)
	answer := make(chan reply, 1)
	go func() { answer <- send(t, http.MethodPost, srv.URL, testToken, s.session, progressNote) }()
	eventually(t, "the notification was never handled", func() bool { return handled.Load() == 1 })
	close(cut) // the drain's wait is over: as at drainTimeout
	// While the session's handler holds, the POST holds the principal's
	// one slot: a request that opens another session is refused busy.
	if r := send(t, http.MethodPost, srv.URL, testToken, "", initBody); r.status != http.StatusServiceUnavailable {
		t.Fatalf("with a notification its session has not handled, the principal opened another session: %d", r.status)
	}
	release()
	var a reply
	select {
	case a = <-answer:
	case <-time.After(10 * time.Second):
		t.Fatal("the notification POST was never answered")
	}
	if a.status != http.StatusNotFound || errorName(a.body) != ErrNotificationsUnhandled {
		t.Fatalf("a notification its session did not handle in time: %d %s, want 404 %s", a.status, a.body, ErrNotificationsUnhandled)
	}
	if r := send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); r.status != http.StatusNotFound {
		t.Fatalf("the session lives on: ping %d %s", r.status, r.body)
	}
	eventually(t, "the closed session is still counted", func() bool { return h.Stats().Sessions == 0 })
	if r := open(t, srv.URL, testToken); r.status != http.StatusOK {
		t.Fatalf("a new session: %d %s", r.status, r.body)
	}
}
