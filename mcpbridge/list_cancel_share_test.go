package mcpbridge

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
)

// TestClientWhoCancelsHungUpToolsListRunsNoMoreThanItsShare: MCP-41
// counted a tools/list until its request's context ended, which go-sdk
// ends on notifications/cancelled before the answer is built: a client
// that posts tools/list, hangs up and cancels it got its slot back at
// once, while the SDK still encoded the answer (up to MaxToolsBytes), and
// held any number of them at once. An extra middleware outside the
// bridge's holds each answer, standing in for that encoding. The slot is
// now held until the answer is marshalled.
func TestClientWhoCancelsHungUpToolsListRunsNoMoreThanItsShare(t *testing.T) {
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
	t.Cleanup(releaseAll)
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
	deadline := time.Now().Add(20 * time.Second)
	for i := 0; i < 4*share; i++ {
		for {
			before := held.Load()
			r, answered := postThenHangUp(t, srv.URL, s.session, `{"jsonrpc":"2.0","id":`+strconv.Itoa(100+i)+`,"method":"tools/list"}`,
				func() bool { return held.Load() > before }, deadline)
			if answered && r.status == http.StatusServiceUnavailable {
				time.Sleep(5 * time.Millisecond)
				continue
			}
			break
		}
		send(t, http.MethodPost, srv.URL, testToken, s.session, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":`+strconv.Itoa(100+i)+`}}`)
		time.Sleep(20 * time.Millisecond)
	}
	if held.Load() > share {
		t.Errorf("%d tools/list answers worked on at once for one principal whose share is %d (each hung up and cancelled)", held.Load(), share)
	}
}
