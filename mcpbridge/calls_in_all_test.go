package mcpbridge

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// manyPrincipals are n principals' DIDs.
func manyPrincipals(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = "did:web:host-" + strconv.Itoa(i) + ".example.org"
	}
	return out
}

// TestToolCallsOfManyPrincipalsEachWithinItsShareAreBoundedInAll: the
// call slots were counted per principal only (MCP-30), and a call's
// arguments are parsed (about 240 bytes per item, some 60 MB at the
// item budget) under that slot, outside the agent's processing slots:
// principals each within their share, their POSTs ended by hanging up,
// ran share x principals parses and handlers at once, more than the
// endpoint's MaxInFlight. Now all principals' calls together are bounded
// by the endpoint's MaxInFlight (MCP-47): past it a call is refused at
// once, 5004 too_many_calls, nothing run; a principal past its own share
// is still told 3005; a slot given back serves the next caller.
func TestToolCallsOfManyPrincipalsEachWithinItsShareAreBoundedInAll(t *testing.T) {
	const share, total, principals = 2, 4, 6
	ag := &blockingAgent{entered: make(chan struct{}, share*principals), release: make(chan struct{})}
	b, err := New(Options{Agent: func() Agent { return ag }, Store: &resolver.Store{}})
	if err != nil {
		t.Fatal(err)
	}
	b.HTTPHandler(HTTPOptions{MaxInFlight: total, MaxPeerInFlight: share})
	p := &mcp.CallToolParamsRaw{Name: "org.example.translate.text_1.0.0", Arguments: []byte(`{"text":"hi","lang":"de"}`)}
	done := make(chan *mcp.CallToolResult, share*principals+2)
	t.Cleanup(func() { close(ag.release) })
	running, refused := 0, 0
	// step starts one call of who and waits until it runs or is answered.
	step := func(who string) *mcp.CallToolResult {
		go func() { done <- b.call(context.Background(), who, p) }()
		select {
		case <-ag.entered:
			running++
			return nil
		case r := <-done:
			return r
		case <-time.After(10 * time.Second): // a hang guard
			t.Fatal("a call neither ran nor was answered")
		}
		return nil
	}
	for _, who := range manyPrincipals(principals) {
		for range share {
			r := step(who)
			if r == nil {
				continue
			}
			refused++
			if rm := resultMeta(t, r); !r.IsError || rm.Code != uint16(amp.CodeOverloaded) || rm.Name != ErrTooManyCalls {
				t.Fatalf("a call past the total: code %d %s, want 5004 %s", rm.Code, rm.Name, ErrTooManyCalls)
			}
		}
	}
	if running != total || refused != share*principals-total {
		t.Fatalf("%d principals each within a share of %d: %d calls ran at once (%d refused), want %d, the endpoint's MaxInFlight",
			principals, share, running, refused, total)
	}
	first := manyPrincipals(1)[0]
	if r := step(first); r == nil {
		t.Fatal("a principal past its share ran a call")
	} else if rm := resultMeta(t, r); rm.Code != uint16(amp.CodeRateLimited) || rm.Name != ErrTooManyCalls {
		t.Fatalf("a principal past its share: code %d %s, want 3005 %s", rm.Code, rm.Name, ErrTooManyCalls)
	}
	ag.release <- struct{}{} // one running call returns
	<-done
	if r := step("did:web:late.example.org"); r != nil {
		rm := resultMeta(t, r)
		t.Fatalf("a slot given back did not serve the next principal: code %d %s", rm.Code, rm.Name)
	}
}

// TestOtherRequestsOfManyPrincipalsEachWithinItsShareAreBoundedInAll:
// the requests other than tools/call (a tools/list, up to MaxToolsBytes
// encoded twice) were counted per principal only (MCP-41): principals
// each within their share ran share x principals of them at once. Now
// all principals' together are bounded by the endpoint's MaxInFlight
// (MCP-47): past it a request is refused at once with CodeBusy and the
// AMP code 5004, which the HTTP endpoint's answer rewriting keeps.
func TestOtherRequestsOfManyPrincipalsEachWithinItsShareAreBoundedInAll(t *testing.T) {
	const share, total, principals = 2, 4, 6
	b, err := New(Options{Agent: func() Agent { return &blockingAgent{} }, Store: &resolver.Store{}})
	if err != nil {
		t.Fatal(err)
	}
	b.HTTPHandler(HTTPOptions{MaxInFlight: total, MaxPeerInFlight: share})
	entered, release := make(chan struct{}, share*principals), make(chan struct{})
	t.Cleanup(func() { close(release) })
	held := func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		entered <- struct{}{}
		<-release
		return nil, nil
	}
	errs := make(chan error, share*principals)
	running, refused := 0, 0
	for _, who := range manyPrincipals(principals) {
		h := b.middleware(&principalServer{principal: who})(held)
		for range share {
			go func() {
				_, err := h(context.Background(), "ping", nil)
				errs <- err
			}()
			select {
			case <-entered:
				running++
				continue
			case err = <-errs:
			case <-time.After(10 * time.Second): // a hang guard
				t.Fatal("a request neither ran nor was refused")
			}
			refused++
			var we *jsonrpc.Error
			if !errors.As(err, &we) || we.Code != CodeBusy || !strings.Contains(string(we.Data), `"code":5004`) {
				t.Fatalf("a request past the total: %v, want CodeBusy with the AMP code 5004", err)
			}
			// The HTTP endpoint writes it with its fixed text and data.
			answer, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "error": we})
			if got := string(rpcErrorBody(answer)); !strings.Contains(got, string(busyAllData)) || !strings.Contains(got, tooManyRequestsAllText) {
				t.Fatalf("the rewritten refusal %s lost its AMP code 5004", got)
			}
		}
	}
	if running != total || refused != share*principals-total {
		t.Fatalf("%d principals each within a share of %d: %d requests answered at once (%d refused), want %d, the endpoint's MaxInFlight",
			principals, share, running, refused, total)
	}
}
