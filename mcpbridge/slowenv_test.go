package mcpbridge

// The slow-handler endpoint the hostile-caller tests share
// (call_hostile_test.go, http_hostile_test.go): two principals, a handler
// that holds until the test ends, and requests sent without waiting.

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// slowEnv is the HTTP endpoint (two principals' tokens, testToken and
// otherToken, both allowed everything) of an agent whose handler of
// testCap holds until the test ends; running counts the handler runs
// started.
type slowEnv struct {
	h       *HTTPEndpoint
	srv     *httptest.Server
	running *atomic.Int64
}

func newSlowEnv(t *testing.T, o HTTPOptions) *slowEnv {
	t.Helper()
	store, err := resolver.Open(newStoreFile(t), resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	id := amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
	running := &atomic.Int64{}
	release := make(chan struct{})
	slow := func(ctx context.Context, params any) (any, error) {
		running.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return map[string]any{"text": "done"}, nil
	}
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: id, Store: store, Policy: agent.Rules{{Caller: "*", Prefix: "*"}},
		Now: time.Now, Rand: rand.Reader, Handlers: map[string]agent.Handler{testCap: slow}, InlineHandlers: false}}) // as serve runs program handlers
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	t.Cleanup(func() { close(release) }) // runs before the agent closes
	b, err := New(Options{Agent: func() Agent { return a }, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := ParseTokenFile([]byte(testPrincipal + " " + testToken + "\n" + otherPrincipal + " " + otherToken + "\n"))
	if err != nil {
		t.Fatal(err)
	}
	o.Tokens = tokens
	h := b.HTTPHandler(o)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &slowEnv{h: h, srv: srv, running: running}
}

// callBody is a tools/call of the test capability with JSON-RPC id n.
func callBody(n int) string {
	return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"org.example.translate.text_1.0.0","arguments":{"text":"hi","lang":"de"}}}`, n)
}

// postAsync posts body in the background until ctx ends (the client goes
// away when it does); the status comes on the channel (0: no answer).
func postAsync(ctx context.Context, url, token, session, body string, hdr map[string]string) <-chan int {
	out := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		if session != "" {
			req.Header.Set(sessionHeader, session)
		}
		for k, v := range hdr {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- 0
			return
		}
		io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		resp.Body.Close()
		out <- resp.StatusCode
	}()
	return out
}

// waitRunning waits up to d for at least n handler runs; it returns the
// count then.
func (s *slowEnv) waitRunning(n int64, d time.Duration) int64 {
	for end := time.Now().Add(d); s.running.Load() < n && time.Now().Before(end); {
		time.Sleep(5 * time.Millisecond)
	}
	return s.running.Load()
}
