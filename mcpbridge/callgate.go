package mcpbridge

import (
	"sync"
	"sync/atomic"

	"github.com/ampbundle/ampbundle/amp"
)

// ErrTooManyCalls names a tools/call refused because its principal runs
// its share of calls already (Options.MaxPrincipalCalls).
const ErrTooManyCalls = "too_many_calls"

// callGate counts the tools/calls each principal runs: a call holds its
// slot from before its arguments are parsed until agent.InvokeLocal has
// returned, whatever became of the request that carried it (a client
// that hung up, one item of a JSON-RPC batch), so that the handlers a
// principal runs at once never exceed its share (docs/SPEC-DECISIONS.md
// MCP-30). The map holds only principals with a call running.
type callGate struct {
	share atomic.Int64 // calls one principal may run at once

	mu      sync.Mutex
	running map[string]int
}

// enter takes one of principal's slots; false when its share is used up
// (the call is then refused, never queued: a queued call would hold its
// goroutine and its arguments for as long as the calls before it run).
func (g *callGate) enter(principal string) bool {
	share := int(g.share.Load())
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[principal] >= share {
		return false
	}
	if g.running == nil {
		g.running = map[string]int{}
	}
	g.running[principal]++
	return true
}

// leave gives back a slot enter took.
func (g *callGate) leave(principal string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[principal]--; g.running[principal] <= 0 {
		delete(g.running, principal)
	}
}

// shareCalls lowers the calls one principal may run at once to n (n > 0;
// never raises it): an HTTP endpoint whose share of one caller
// (HTTPOptions.MaxPeerInFlight) is smaller than the bridge's makes it the
// bridge's, so that a call outliving its request (the client hung up)
// still counts against that share.
func (b *Bridge) shareCalls(n int) {
	if n <= 0 {
		return
	}
	for {
		cur := b.calls.share.Load()
		if int64(n) >= cur || b.calls.share.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// tooManyCalls is the refusal of a call past its principal's share.
func tooManyCalls() error {
	return amp.Named(amp.CodeRateLimited, ErrTooManyCalls, "this principal runs as many tool calls as it may at once; retry later")
}
