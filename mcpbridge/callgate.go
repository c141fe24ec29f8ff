package mcpbridge

import (
	"bytes"
	"encoding/json"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

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
// MCP-30), nor those of every principal together the total (MCP-47).
// The map holds only principals with a call running.
type callGate struct {
	share atomic.Int64 // calls one principal may run at once
	total atomic.Int64 // calls all principals may run at once

	mu      sync.Mutex
	running map[string]int
	all     int // the sum of running
}

// gateRefusal is why enter refused a slot: gateOpen when it did not.
type gateRefusal uint8

const (
	gateOpen      gateRefusal = iota // a slot was taken
	gatePrincipal                    // the principal's share is used up
	gateAll                          // every principal's together are at the total
)

// enter takes one of principal's slots, or names what is used up (the
// call is then refused, never queued: a queued call would hold its
// goroutine and its arguments for as long as the calls before it run).
// The principal's share is checked first: a principal past it is told
// so whatever the others run.
func (g *callGate) enter(principal string) gateRefusal {
	share, total := int(g.share.Load()), int(g.total.Load())
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.running[principal] >= share {
		return gatePrincipal
	}
	if g.all >= total {
		return gateAll
	}
	if g.running == nil {
		g.running = map[string]int{}
	}
	g.running[principal]++
	g.all++
	return gateOpen
}

// leave gives back a slot enter took.
func (g *callGate) leave(principal string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.all--
	if g.running[principal]--; g.running[principal] <= 0 {
		delete(g.running, principal)
	}
}

// lower lowers g's share to n (n > 0; never raises it).
func (g *callGate) lower(n int) { lowerTo(&g.share, n) }

// lowerTo lowers v to n (n > 0; never raises it).
func lowerTo(v *atomic.Int64, n int) {
	if n <= 0 {
		return
	}
	for {
		cur := v.Load()
		if int64(n) >= cur || v.CompareAndSwap(cur, int64(n)) {
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

// totalCalls lowers the calls, and apart the other requests, all
// principals together may have answered at once to n (n > 0; never
// raises them): an HTTP endpoint's MaxInFlight, so that requests that
// outlive their POSTs are bounded in all as the POSTs are (MCP-47).
func (b *Bridge) totalCalls(n int) {
	lowerTo(&b.calls.total, n)
	lowerTo(&b.requests.total, n)
}

// enterRequest takes one of principal's request slots for a request other
// than tools/call, or names what is used up (the principal's share, or
// the total of all principals'): the request is then refused
// (tooManyRequests), never queued. The slot is held until the
// handler returned, and a tools/list's until its answer has been
// marshalled (heldResult), which the SDK does after the handler returned,
// whatever became of the request: the client may have hung up, or
// cancelled it (go-sdk v1.8.0 ends a request's context on
// notifications/cancelled, before its answer is built, so the context's
// end would free the slot while a 16 MiB tools/list is still encoded;
// MCP-41, amended). release gives it back, once.
func (b *Bridge) enterRequest(principal string) (release func(), refused gateRefusal) {
	if refused := b.requests.enter(principal); refused != gateOpen {
		return nil, refused
	}
	return sync.OnceFunc(func() { b.requests.leave(principal) }), gateOpen
}

// heldResult is an answer that holds its request's slot until the SDK has
// marshalled it (MarshalJSON), or, should it never be, until it is
// garbage (a cleanup). It is the answer itself to the SDK: the embedded
// Result gives it the interface, and its JSON is the Result's, written
// as the SDK writes answers (HTML characters not escaped).
type heldResult struct {
	mcp.Result
	release func()
}

// holdUntilMarshalled wraps res so that release runs once it is
// marshalled (or collected unmarshalled).
func holdUntilMarshalled(res mcp.Result, release func()) *heldResult {
	h := &heldResult{Result: res, release: release}
	runtime.AddCleanup(h, func(f func()) { f() }, release)
	return h
}

// MarshalJSON implements json.Marshaler: the Result's JSON, then the slot
// given back.
func (h *heldResult) MarshalJSON() ([]byte, error) {
	defer h.release()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(h.Result); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

// busyData is the data of a CodeBusy error of ErrTooManyRequests: the
// AMP code 3005 (rate limited) and the name.
var busyData = mustJSON(map[string]any{"code": uint16(amp.CodeRateLimited), "name": ErrTooManyRequests})

// busyAllData is the data of a CodeBusy error of ErrTooManyRequests past
// the total of all principals: the AMP code 5004 (overloaded) and the
// name (MCP-47).
var busyAllData = mustJSON(map[string]any{"code": uint16(amp.CodeOverloaded), "name": ErrTooManyRequests})

// tooManyRequestsText is the message of a CodeBusy error.
const tooManyRequestsText = "too many requests of this principal at once; retry later"

// tooManyRequestsAllText is the message of a CodeBusy error past the
// total of all principals.
const tooManyRequestsAllText = "too many requests at once; retry later"

// tooManyRequests is the refusal of a request past its principal's share
// (3005) or the total (5004).
func tooManyRequests(refused gateRefusal) error {
	if refused == gateAll {
		return &jsonrpc.Error{Code: CodeBusy, Message: tooManyRequestsAllText, Data: busyAllData}
	}
	return &jsonrpc.Error{Code: CodeBusy, Message: tooManyRequestsText, Data: busyData}
}

// tooManyCalls is the refusal of a call past its principal's share
// (3005, retryable by that principal once one of its calls ends) or the
// total of all principals' (5004, the agent is busy).
func tooManyCalls(refused gateRefusal) error {
	if refused == gateAll {
		return amp.Named(amp.CodeOverloaded, ErrTooManyCalls, "the agent runs as many tool calls as it may at once; retry later")
	}
	return amp.Named(amp.CodeRateLimited, ErrTooManyCalls, "this principal runs as many tool calls as it may at once; retry later")
}
