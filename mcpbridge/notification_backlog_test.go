package mcpbridge

import (
	"context"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestNotificationsASessionHasNotHandledAreBoundedByItsPOSTs (MCP-54):
// go-sdk v1.8.0 answers a POST of notifications 202 as soon as it has
// handed them to the session's connection (mcp/streamable.go,
// servePOST), and handles a session's notifications one at a time
// (internal/jsonrpc2, handleAsync: an unbounded queue). The POST's
// request slot and bytes were given back with the 202, so nothing bounded
// the notifications queued behind a slow one: a token holder posting
// notifications faster than its session handled them (from many
// connections at once, each as fast as the endpoint reads) grew the
// queue without end, each holding its raw params (up to MaxBody). Here
// the session's handler of notifications/progress is held, as a slow
// one is: 40 POSTs of one notification were each answered 202, 40
// notifications queued, before this change. Now a POST that carries a
// notification holds its slot until the SDK has handled it, so the
// notifications queued are bounded by the principal's MaxPeerInFlight
// POSTs (and bytes); the others are refused busy. Time is only a hang
// guard.
func TestNotificationsASessionHasNotHandledAreBoundedByItsPOSTs(t *testing.T) {
	const share, posts = 2, 40
	h, srv := sessionEnv(t, HTTPOptions{MaxPeerInFlight: share, MaxInFlight: 8})
	s := open(t, srv.URL, testToken)
	if s.status != http.StatusOK {
		t.Fatalf("initialize: %d %s", s.status, s.body)
	}
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	var handled atomic.Int64
	h.b.Server(testPrincipal).AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "notifications/progress" {
				handled.Add(1)
				<-release // a slow notification handler
			}
			return next(ctx, method, req)
		}
	})
	const note = `{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"p","progress":1}}`
	statuses := make(chan int, posts+1)
	post := func() {
		statuses <- send(t, http.MethodPost, srv.URL, testToken, s.session, note).status
	}
	go post()
	eventually(t, "the first notification was never handled", func() bool { return handled.Load() == 1 })
	for range posts {
		go post()
	}
	// Every POST is answered but those held (at most the share).
	accepted, busy := 0, 0
	for end := time.After(10 * time.Second); accepted+busy < posts+1-share; {
		select {
		case st := <-statuses:
			switch st {
			case http.StatusAccepted:
				accepted++
			case http.StatusServiceUnavailable, http.StatusTooManyRequests:
				busy++
			default:
				t.Fatalf("a notification POST answered %d", st)
			}
		case <-end:
			t.Fatalf("%d accepted, %d busy: POSTs neither answered nor refused", accepted, busy)
		}
	}
	if accepted > 0 {
		t.Fatalf("with the session's handler held, %d notification POSTs were accepted (202) and their notifications queued; %d refused", accepted, busy)
	}
	// Once the handler goes on, the held POSTs are answered, and the
	// session serves as before.
	once.Do(func() { close(release) })
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
	if r := send(t, http.MethodPost, srv.URL, testToken, s.session, note); r.status != http.StatusAccepted {
		t.Fatalf("a notification after: %d %s", r.status, r.body)
	}
}
