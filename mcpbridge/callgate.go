package mcpbridge

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/ampbundle/ampbundle/amp"
)

// ErrTooManyCalls names a tools/call refused because its principal runs
// its share of calls already (Options.MaxPrincipalCalls).
const ErrTooManyCalls = "too_many_calls"

// ErrTooManyRequests names a request other than tools/call (tools/list,
// initialize, ping, …) refused because its principal has as many of them
// being answered as its share (Options.MaxPrincipalCalls): a JSON-RPC
// error, code CodeBusy (docs/SPEC-DECISIONS.md MCP-41).
const ErrTooManyRequests = "too_many_requests"

// CodeBusy is the JSON-RPC error code of a refusal for a principal's
// share: ErrTooManyRequests, and the HTTP endpoint's ErrTooManySessions.
// Its data is {"code","name"}: the AMP code (3005) and the name.
const CodeBusy = -32000

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

// lower lowers g's share to n (n > 0; never raises it).
func (g *callGate) lower(n int) {
	if n <= 0 {
		return
	}
	for {
		cur := g.share.Load()
		if int64(n) >= cur || g.share.CompareAndSwap(cur, int64(n)) {
			return
		}
	}
}

// shareCalls lowers the calls, and the other requests, one principal may
// have answered at once to n (n > 0; never raises them): an HTTP endpoint
// whose share of one caller (HTTPOptions.MaxPeerInFlight) is smaller than
// the bridge's makes it the bridge's, so that a request outliving its POST
// (the client hung up) still counts against that share.
func (b *Bridge) shareCalls(n int) {
	b.calls.lower(n)
	b.requests.lower(n)
}

// enterRequest takes one of principal's request slots for a request other
// than tools/call, held until the SDK is done with it: go-sdk v1.8.0's
// JSON-RPC connection cancels a request's context once its answer is
// written, or dropped because the client that asked went away
// (internal/jsonrpc2, Connection.processResult), so the slot covers the
// handler and the encoding and writing of its answer, which a POST's
// in-flight share does not once the client hung up (MCP-41). False when
// the share is used up: the request is then refused (tooManyRequests),
// never queued.
func (b *Bridge) enterRequest(ctx context.Context, principal string) bool {
	if !b.requests.enter(principal) {
		return false
	}
	context.AfterFunc(ctx, func() { b.requests.leave(principal) })
	return true
}

// busyData is the data of a CodeBusy error of ErrTooManyRequests: the
// AMP code 3005 (rate limited) and the name.
var busyData = mustJSON(map[string]any{"code": uint16(amp.CodeRateLimited), "name": ErrTooManyRequests})

// tooManyRequestsText is the message of a CodeBusy error.
const tooManyRequestsText = "too many requests of this principal at once; retry later"

// tooManyRequests is the refusal of a request past its principal's share.
func tooManyRequests() error {
	return &jsonrpc.Error{Code: CodeBusy, Message: tooManyRequestsText, Data: busyData}
}

// tooManyCalls is the refusal of a call past its principal's share.
func tooManyCalls() error {
	return amp.Named(amp.CodeRateLimited, ErrTooManyCalls, "this principal runs as many tool calls as it may at once; retry later")
}
