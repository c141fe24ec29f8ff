package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
)

// TestStdioBatchHoldingANotificationIsAnsweredNotHeld (MCP-53): go-sdk
// v1.8.0's stdio connection (mcp/transport.go, ioConn.Read) tracks every
// message of a batch as a request awaiting its answer, a notification
// too (under the zero id, which no answer ever carries), and writes the
// batch's answer only once all are answered: a 2025-03-26 host's batch
// of a ping and a notification was never answered, and its host waited
// for ever (MCP 2025-06-18 removed batching; the SDK still reads
// batches of sessions before it). Now such a batch is refused before
// the SDK reads it: each of its requests is answered with a JSON-RPC
// error -32600, data name ErrNotificationBatched, under its id; nothing
// of it runs; the session goes on. A batch of notifications alone is
// handed to the SDK one message at a time, unanswered. Time is only a
// hang guard.
func TestStdioBatchHoldingANotificationIsAnsweredNotHeld(t *testing.T) {
	const note = `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}`
	for _, c := range []struct {
		threat string
		batch  string
		ids    []string // the ids answered, as written
	}{
		{"a ping beside a notification", batchMsgs(`{"jsonrpc":"2.0","id":7,"method":"ping"}`, note), []string{"7"}},
		{"a notification before a call", batchMsgs(note, callBody(8)), []string{"8"}},
		{"a call beside a request under a null id", batchMsgs(callBody(9), `{"jsonrpc":"2.0","id":null,"method":"ping"}`), []string{"9"}},
		{"a request whose id only another spelling names", batchMsgs(`{"jsonrpc":"2.0","id":"a\u00e9","method":"ping"}`, `{"jsonrpc":"2.0","ID":10,"method":"ping"}`), []string{`"aé"`}},
	} {
		t.Run(c.threat, func(t *testing.T) {
			e, p := serveStdioEnv(t)
			p.send(t, c.batch)
			var answers []struct {
				ID    json.RawMessage `json:"id"`
				Error *struct {
					Code int `json:"code"`
					Data struct {
						Code int    `json:"code"`
						Name string `json:"name"`
					} `json:"data"`
				} `json:"error"`
			}
			select {
			case a := <-p.answers:
				if err := json.Unmarshal([]byte(a), &answers); err != nil {
					t.Fatalf("the batch was answered %.300q, not a batch answer", a)
				}
			case err := <-p.done:
				t.Fatalf("the session ended: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("the batch was never answered: its host waits for ever")
			}
			if len(answers) != len(c.ids) {
				t.Fatalf("%d answers, want %d", len(answers), len(c.ids))
			}
			for i, a := range answers {
				if string(a.ID) != c.ids[i] || a.Error == nil || a.Error.Code != int(jsonrpc.CodeInvalidRequest) ||
					a.Error.Data.Code != 4001 || a.Error.Data.Name != ErrNotificationBatched {
					t.Fatalf("answer %d: id %s, error %+v; want id %s, -32600 %s", i, a.ID, a.Error, c.ids[i], ErrNotificationBatched)
				}
			}
			if n := e.runs.Load(); n != 0 {
				t.Fatalf("refused, yet %d calls ran", n)
			}
			// The session goes on.
			p.send(t, `{"jsonrpc":"2.0","id":20,"method":"ping"}`)
			if got := p.answerID(t); got != "20" {
				t.Fatalf("the next ping was answered under %q", got)
			}
			p.send(t, callBody(21))
			if got := p.answerID(t); got != "21" || e.runs.Load() != 1 {
				t.Fatalf("the next call was answered under %q, %d runs", got, e.runs.Load())
			}
		})
	}
	// A batch of notifications alone owes no answer: the SDK is handed
	// its messages one by one and nothing is written (a 2025-03-26 host's
	// [notifications/initialized] must still initialize its session); the
	// session goes on, the next answer is the next request's.
	for _, batch := range []string{batchMsgs(note), batchMsgs(note, note)} {
		_, p := serveStdioEnv(t)
		p.send(t, batch)
		p.send(t, `{"jsonrpc":"2.0","id":40,"method":"ping"}`)
		if got := p.answerID(t); got != "40" {
			t.Fatalf("after a batch of notifications alone, the next answer was under %q, want the ping's 40", got)
		}
	}
	// A batch of requests only is answered by the SDK as before.
	e, p := serveStdioEnv(t)
	p.send(t, batchMsgs(`{"jsonrpc":"2.0","id":30,"method":"ping"}`, callBody(31)))
	select {
	case a := <-p.answers:
		var answers []struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(a), &answers); err != nil || len(answers) != 2 || answers[0].Result == nil || answers[1].Result == nil {
			t.Fatalf("a batch of requests was answered %.300q", a)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a batch of requests was not answered")
	}
	if e.runs.Load() != 1 {
		t.Fatalf("%d runs, want 1", e.runs.Load())
	}
}

// serveStdioEnv is serveStdioPipes, its session initialized, that also
// returns the env, whose runs count the calls that ran.
func serveStdioEnv(t *testing.T) (*env, *stdioPeer) {
	t.Helper()
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &stdioPeer{in: inW, answers: make(chan string, 16), done: make(chan error, 1)}
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	go func() {
		p.done <- e.bridge.ServeStdio(ctx, testPrincipal, &mcp.IOTransport{Reader: inR, Writer: outW})
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.answers <- sc.Text()
		}
		close(p.answers)
	}()
	// A host of protocol 2025-03-26, whose batches the SDK reads.
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	if got := p.answerID(t); got != "1" {
		t.Fatalf("initialize was answered under %q", got)
	}
	p.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return e, p
}
