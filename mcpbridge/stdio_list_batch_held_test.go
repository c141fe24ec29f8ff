package mcpbridge

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// slowStdio is one stdio session of a bridge whose agent's handler of
// testCap holds until the test ends: running counts its runs started,
// lists the tools/list answers the SDK encoded.
type slowStdio struct {
	*stdioPeer
	running, lists atomic.Int64
}

func serveSlowStdio(t *testing.T) *slowStdio {
	t.Helper()
	store, err := resolver.Open(newStoreFile(t), resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	id := amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
	s := &slowStdio{}
	release := make(chan struct{})
	slow := func(ctx context.Context, params any) (any, error) {
		s.running.Add(1)
		select {
		case <-release:
		case <-ctx.Done():
		}
		return map[string]any{"text": "done"}, nil
	}
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: id, Store: store, Policy: agent.Rules{{Caller: "*", Prefix: "*"}},
		Now: time.Now, Rand: rand.Reader, Handlers: map[string]agent.Handler{testCap: slow}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	t.Cleanup(func() { close(release) }) // runs before the agent closes
	b, err := New(Options{Agent: func() Agent { return a }, Store: store})
	if err != nil {
		t.Fatal(err)
	}
	var listBytes atomic.Int64
	b.Server(testPrincipal).AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if method == "tools/list" && err == nil && res != nil {
				return &countedResult{Result: res, n: &s.lists, bytes: &listBytes}, nil
			}
			return res, err
		}
	})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	s.stdioPeer = &stdioPeer{in: inW, answers: make(chan string, 16), done: make(chan error, 1)}
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	go func() {
		s.done <- b.ServeStdio(ctx, testPrincipal, &mcp.IOTransport{Reader: inR, Writer: outW})
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			s.answers <- sc.Text()
		}
		close(s.answers)
	}()
	// A host of protocol 2025-03-26, whose batches the SDK accepts.
	s.send(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	if got := s.answerID(t); got != "1" {
		t.Fatalf("initialize was answered under %q", got)
	}
	s.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return s
}

// TestStdioBatchWhoseListAnswersWaitOnACallEndsTheSession: MCP-42
// refused, on the HTTP endpoint only, a batch holding a tools/list
// beside another request; the stdio transport (mcp.IOTransport, whose
// ioConn keeps a batch's encoded answers, msgBatch, until its last
// request is answered) took it. A stdio host's batch of a slow
// tools/call and 15 tools/lists had the 15 list answers (each up to
// MaxToolsBytes) encoded, their request slots given back, and held for
// as long as the call ran, again for each of the principal's 16 call
// slots. The stdio check now applies the same rule (MCP-48): such a
// batch ends the session with ErrListBatched before the SDK reads it;
// nothing runs and no answer is encoded. So does a list beside a
// notification: go-sdk v1.8.0's stdio connection awaits an answer to a
// batch's notification too, so the batch's answer is never written and
// the list's held until the session ends. A list alone, in a batch of
// one, or beside the host's response to a server request, is answered
// as before. Time is only a hang guard.
func TestStdioBatchWhoseListAnswersWaitOnACallEndsTheSession(t *testing.T) {
	for _, c := range []struct {
		threat string
		body   string
		lists  int
	}{
		{"15 lists after a slow call", listsBeside(100, 15, false), 15},
		{"15 lists before a slow call", listsBeside(200, 15, true), 15},
		{"a list spelt with an escape beside a call", batchMsgs(callBody(300), `{"jsonrpc":"2.0","id":301,"method":"tools\/list"}`), 1},
		// The SDK's stdio connection awaits an answer to a batch's
		// notification too: the list's answer is never written, and
		// held until the session ends.
		{"a list beside a notification", batchMsgs(listBody(400), `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":999}}`), 1},
		{"a list beside a notification under a null id", batchMsgs(`{"jsonrpc":"2.0","id":null,"method":"ping"}`, listBody(500)), 1},
	} {
		t.Run(c.threat, func(t *testing.T) {
			s := serveSlowStdio(t)
			s.send(t, c.body)
			for end := time.Now().Add(10 * time.Second); ; time.Sleep(2 * time.Millisecond) {
				select {
				case err := <-s.done:
					if amp.NameOf(err) != ErrListBatched {
						t.Fatalf("the session ended with %v, want %s", err, ErrListBatched)
					}
					if n, calls := s.lists.Load(), s.running.Load(); n != 0 || calls != 0 {
						t.Fatalf("refused, yet %d list answers were encoded and %d calls ran", n, calls)
					}
					return
				default:
				}
				if s.running.Load() > 0 && s.lists.Load() == int64(c.lists) {
					t.Fatalf("%d tools/list answers encoded, their slots given back, held unwritten while the batch's tools/call runs", s.lists.Load())
				}
				if time.Now().After(end) {
					t.Fatalf("the session neither ended nor wrote the batch's answer: %d list answers encoded, held", s.lists.Load())
				}
			}
		})
	}
	s := serveSlowStdio(t)
	for i, body := range []string{
		listBody(40),
		batchMsgs(listBody(41)),
		batchMsgs(listBody(42), `{"jsonrpc":"2.0","id":43,"result":{}}`),
	} {
		s.send(t, body)
		select {
		case a := <-s.answers:
			if !strings.Contains(a, `"result"`) || strings.Contains(a, `"error"`) {
				t.Fatalf("%s: answered %.300q, want its result", body, a)
			}
		case err := <-s.done:
			t.Fatalf("%s: the session ended: %v", body, err)
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no answer", body)
		}
		if got := s.lists.Load(); got != int64(i+1) {
			t.Fatalf("%d list answers, want %d", got, i+1)
		}
	}
}
