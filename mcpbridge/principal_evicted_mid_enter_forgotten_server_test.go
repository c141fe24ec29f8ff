package mcpbridge

import (
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPrincipalEvictedMidEnterKeepsAForgottenServer: enter lets
// h.mu go while the first use of a principal makes its server
// (Bridge.Server, which verifies its tools). Review 77's mend answers
// busy when the entry seen under the first lock is evicted meanwhile, but
// not when the principal had no entry then and its server, handed out,
// is forgotten meanwhile: two first requests of one token holder race;
// the first makes the entry, goes idle, and another principal's request
// evicts it (Bridge.forget drops the server); the second then makes a
// new entry around the server the bridge forgot. Bridge.Refresh walks
// only the servers it holds, so that server's tool list is never
// brought up to date again (a revoked bundle's tool stays listed, no
// notifications/tools/list_changed reach its sessions), and the bridge's
// MaxPrincipals count no longer covers it. Before MCP-37 the entry was
// made on the forgotten server. Should: the request is answered busy (503,
// retryable), as when its entry was evicted, and no entry holds a server
// the bridge does not.
func TestPrincipalEvictedMidEnterKeepsAForgottenServer(t *testing.T) {
	h, _ := sessionEnv(t, HTTPOptions{MaxPrincipals: 1})
	b := h.b
	orig := b.opts.Agent
	var armed atomic.Bool
	var calls atomic.Int64
	entered, release := make(chan struct{}), make(chan struct{})
	b.opts.Agent = func() Agent {
		if armed.Load() && calls.Add(1) == 2 {
			entered <- struct{}{}
			<-release
		}
		return orig()
	}
	if b.Server(testPrincipal) == nil {
		t.Fatal("no server")
	}
	ps := b.servers[testPrincipal]
	ps.mu.Lock() // both first requests wait inside Bridge.Server
	type result struct {
		req    request
		status int
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			req, st := h.enter(testPrincipal, false, false, "")
			results <- result{req, st}
		}()
	}
	pollUntil(t, "two first requests in Bridge.Server", func() bool {
		return strings.Count(allStacks(), "mcpbridge.(*Bridge).sync(") >= 2
	})
	armed.Store(true)
	ps.mu.Unlock()
	first := <-results
	if first.status != 0 {
		t.Fatalf("first request: %d", first.status)
	}
	<-entered // the second holds its server, h.mu let go
	h.leave(first.req, "")
	q, st := h.enter(otherPrincipal, false, false, "") // evicts the idle first entry
	if st != 0 {
		t.Fatalf("other principal: %d", st)
	}
	h.leave(q, "")
	close(release)
	second := <-results
	if second.status == 0 {
		defer h.leave(second.req, "")
	}
	h.mu.Lock()
	ent := h.principals[testPrincipal]
	h.mu.Unlock()
	b.mu.Lock()
	held := b.servers[testPrincipal]
	b.mu.Unlock()
	if ent != nil && (held == nil || held.server != ent.srv) {
		t.Fatalf("the principal's entry serves a server the bridge forgot (answered %d): Refresh never updates its tools", second.status)
	}
}

// allStacks is every goroutine's stack, whole however many goroutines
// other tests left running (a fixed buffer cut the dump short).
func allStacks() string {
	for buf := make([]byte, 1<<20); ; buf = make([]byte, 2*len(buf)) {
		if n := runtime.Stack(buf, true); n < len(buf) {
			return string(buf[:n])
		}
	}
}

// pollUntil polls cond for up to 5 s.
func pollUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("never: %s", what)
}
