package mcpbridge

// In JSON response mode go-sdk v1.8.0 keeps each encoded answer of a
// batch (mcp/streamable.go, stream.deliverLocked, pendingJSONMessages)
// until every request of the batch is answered, then writes them as one
// array. A tools/list gives its request slot back once its answer is
// marshalled (MCP-41), before it goes into that buffer: the answers of a
// batch's tools/lists (each up to MaxToolsBytes) were held, counted by
// no slot, for as long as a tools/call of the same batch ran
// (docs/SPEC-DECISIONS.md MCP-42).

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/amp"
)

// countedResult is a tools/list answer whose marshalling is counted: the
// answers the SDK has encoded, and their bytes.
type countedResult struct {
	mcp.Result
	n, bytes *atomic.Int64
}

func (c *countedResult) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(c.Result)
	if err == nil {
		c.n.Add(1)
		c.bytes.Add(int64(len(b)))
	}
	return b, err
}

// listBody is a tools/list request with JSON-RPC id n.
func listBody(n int) string {
	return `{"jsonrpc":"2.0","id":` + strconv.Itoa(n) + `,"method":"tools/list"}`
}

// batchMsgs is a JSON-RPC batch of msgs.
func batchMsgs(msgs ...string) string { return "[" + strings.Join(msgs, ",") + "]" }

// listsBeside is a batch of a tools/call (id base) and lists
// tools/lists (ids base+1 and on), the call first or last. A call the
// SDK still runs keeps its id in flight: each case has its own ids.
func listsBeside(base, lists int, callLast bool) string {
	msgs := []string{callBody(base)}
	for i := 1; i <= lists; i++ {
		msgs = append(msgs, listBody(base+i))
	}
	if callLast {
		msgs = append(msgs[1:], msgs[0])
	}
	return batchMsgs(msgs...)
}

// TestBatchWhoseListAnswersWaitOnACallIsRefused: a batch of a slow
// tools/call and 15 tools/lists had the 15 list answers encoded at once,
// their slots given back, and the answers held by the SDK, unwritten,
// for as long as the call ran (threat: one token holder keeping 15 list
// answers of up to MaxToolsBytes each, 240 MiB, per call slot it holds).
// A POST whose batch holds a tools/list beside another request is now
// refused before the SDK reads it, 400 ErrListBatched: no call runs, no
// answer is encoded. The count of answers encoded while the POST had no
// answer is what the SDK held; time is only a hang guard.
func TestBatchWhoseListAnswersWaitOnACallIsRefused(t *testing.T) {
	s := newSlowEnv(t, HTTPOptions{})
	var lists, listBytes atomic.Int64
	s.h.b.Server(testPrincipal).AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" && err == nil && res != nil {
				return &countedResult{Result: res, n: &lists, bytes: &listBytes}, nil
			}
			return res, err
		}
	})
	a := open(t, s.srv.URL, testToken)
	if a.status != http.StatusOK {
		t.Fatalf("session: %d %s", a.status, a.body)
	}
	for _, c := range []struct {
		threat string
		body   string
		lists  int // tools/lists in the batch
	}{
		{"15 lists after a slow call", listsBeside(100, 15, false), 15},
		{"15 lists before a slow call", listsBeside(200, 15, true), 15},
		{"one list beside a slow call", listsBeside(300, 1, false), 1},
		{"a list spelt with an escape", batchMsgs(callBody(400), `{"jsonrpc":"2.0","id":401,"method":"tools\/list"}`), 1},
		{"a list under an escaped member name", batchMsgs(callBody(500), `{"jsonrpc":"2.0","id":501,"m\u0065thod":"tools/list"}`), 1},
	} {
		t.Run(c.threat, func(t *testing.T) {
			lists.Store(0)
			listBytes.Store(0)
			ran := s.running.Load()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel() // the client hangs up: its POST ends
			got := postReply(ctx, s.srv.URL, a.session, c.body)
			var r reply
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
				select {
				case r = <-got:
				default:
				}
				if r.status != 0 {
					break
				}
				if s.running.Load() > ran && lists.Load() == int64(c.lists) {
					// The call runs and every list answer is encoded,
					// while the POST has no answer: the SDK holds them.
					t.Fatalf("%d tools/list answers (%d bytes) encoded, their slots given back, held unwritten while the batch's tools/call runs",
						lists.Load(), listBytes.Load())
				}
				if time.Now().After(end) {
					t.Fatal("no answer, and the batch never ran")
				}
			}
			if r.status != http.StatusBadRequest || !strings.Contains(r.body, `"name":"`+ErrListBatched+`"`) {
				t.Fatalf("answered %d %.300q, want 400 %s", r.status, r.body, ErrListBatched)
			}
			if n, calls := lists.Load(), s.running.Load()-ran; n != 0 || calls != 0 {
				t.Fatalf("refused, yet %d list answers were encoded and %d calls ran", n, calls)
			}
		})
	}
	// A tools/list alone is answered, in a batch of one too, and beside
	// a notification (which has no answer to wait for).
	for _, body := range []string{
		listBody(40),
		batchMsgs(listBody(41)),
		batchMsgs(listBody(42), `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`),
		batchMsgs(`{"jsonrpc":"2.0","id":43,"method":"ping"}`, `{"jsonrpc":"2.0","id":44,"method":"ping"}`),
	} {
		st, got := postOpen(t, s.srv.URL, testToken, a.session, body, 10*time.Second)
		if st != http.StatusOK || !strings.Contains(got, `"result"`) || strings.Contains(got, `"error"`) {
			t.Fatalf("%s: answered %d %.300q, want its results", body, st, got)
		}
	}
}

// postReply posts body in session (no protocol version header: a batch
// is accepted) until ctx ends; the answer comes on the channel (status
// 0: none).
func postReply(ctx context.Context, url, session, body string) <-chan reply {
	out := make(chan reply, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set(sessionHeader, session)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- reply{}
			return
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		out <- reply{status: resp.StatusCode, header: resp.Header, body: string(b)}
	}()
	return out
}

// TestBatchedListUnderAnySpellingIsRefusedBeforeTheSDK: the body check
// finds a tools/list and a request under every spelling the SDK may read
// as method and id (escapes, letter case, each duplicate),
// and refuses only a batch holding a tools/list beside another request
// (threat: a list answer held behind a slow request, hidden from the
// check by its spelling). A notification beside a list and other
// requests batched together pass as before; stdio's check (checkBody)
// refuses at least what this one does (MCP-48).
func TestBatchedListUnderAnySpellingIsRefusedBeforeTheSDK(t *testing.T) {
	const (
		list = `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`
		ping = `{"jsonrpc":"2.0","id":2,"method":"ping"}`
		note = `{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`
	)
	for _, c := range []struct {
		threat  string
		body    string
		refused bool
	}{
		{"a list beside a call", batchMsgs(callBody(3), list), true},
		{"a list beside a ping", batchMsgs(ping, list), true},
		{"two lists", batchMsgs(list, listBody(4)), true},
		{"the list last of three", batchMsgs(ping, note, callBody(3), list), true},
		{"method escaped", batchMsgs(ping, `{"jsonrpc":"2.0","id":1,"method":"\u0074ools\/list"}`), true},
		{"method member in capitals", batchMsgs(ping, `{"jsonrpc":"2.0","id":1,"METHOD":"tools/list"}`), true},
		{"method member in mixed case, the list first", batchMsgs(`{"jsonrpc":"2.0","id":1,"mEthOd":"tools/list"}`, ping), true},
		{"the list the last of two methods", batchMsgs(ping, `{"jsonrpc":"2.0","id":1,"method":"ping","method":"tools/list"}`), true},
		{"the list the first of two methods", batchMsgs(ping, `{"jsonrpc":"2.0","id":1,"method":"tools/list","method":"ping"}`), true},
		{"the other request's id in capitals", batchMsgs(list, `{"jsonrpc":"2.0","ID":2,"method":"ping"}`), true},
		{"the other request's id escaped", batchMsgs(list, `{"jsonrpc":"2.0","\u0069d":2,"method":"ping"}`), true},
		{"an id null then not", batchMsgs(list, `{"jsonrpc":"2.0","id":null,"id":2,"method":"ping"}`), true},
		{"a list alone", list, false},
		{"a batch of one list", batchMsgs(list), false},
		{"a list beside notifications", batchMsgs(note, list, note), false},
		{"a list beside a null id", batchMsgs(list, `{"jsonrpc":"2.0","id":null,"method":"ping"}`), false},
		{"a list notification beside a call", batchMsgs(callBody(3), `{"jsonrpc":"2.0","method":"tools/list"}`), false},
		{"calls and pings", batchMsgs(callBody(3), ping, callBody(4)), false},
		{"tools/list in the params", batchMsgs(ping, `{"jsonrpc":"2.0","id":5,"method":"ping","params":{"method":"tools/list"}}`), false},
		{"another list method", batchMsgs(ping, `{"jsonrpc":"2.0","id":5,"method":"prompts/list"}`), false},
		{"a list beside the host's response to a server request", batchMsgs(list, `{"jsonrpc":"2.0","id":7,"result":{}}`), false},
		{"a list beside the host's error response", batchMsgs(`{"jsonrpc":"2.0","id":7,"error":{"code":-1,"message":"no"}}`, list), false},
		{"a list beside a response that names a method in capitals", batchMsgs(list, `{"jsonrpc":"2.0","id":7,"Method":"ping","result":{}}`), true},
	} {
		err := checkPostBody([]byte(c.body), 1<<10)
		var name string
		if e, ok := err.(*amp.Error); ok {
			name = string(e.Name)
		} else if err != nil {
			t.Fatalf("%s: %v", c.threat, err)
		}
		if want := map[bool]string{true: ErrListBatched}[c.refused]; name != want {
			t.Errorf("%s: checkPostBody named %q, want %q", c.threat, name, want)
		} else if c.refused {
			if st := bodyStatus(err.(*amp.Error)); st != http.StatusBadRequest {
				t.Errorf("%s: status %d, want 400", c.threat, st)
			}
		}
		// Stdio's check refuses what the POST's does (and more: a
		// list beside a notification, MCP-48).
		if err := checkBody([]byte(c.body), 1<<10); c.refused && amp.NameOf(err) != ErrListBatched {
			t.Errorf("%s: stdio's check passed it: %v", c.threat, err)
		}
	}
}
