package mcpbridge

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
)

// stdioPeer serves one stdio session of a bridge over pipes: send writes a
// line to the agent, answers reads its lines, done reports ServeStdio's
// result.
type stdioPeer struct {
	in      *io.PipeWriter
	answers chan string
	done    chan error
}

func serveStdioPipes(t *testing.T, maxLine int) *stdioPeer {
	t.Helper()
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	p := &stdioPeer{in: inW, answers: make(chan string, 16), done: make(chan error, 1)}
	t.Cleanup(func() { cancel(); inW.Close(); outR.Close() })
	go func() {
		p.done <- e.bridge.ServeStdio(ctx, testPrincipal, &mcp.IOTransport{Reader: inR, Writer: outW, MaxLineLength: maxLine})
	}()
	go func() {
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			p.answers <- sc.Text()
		}
		close(p.answers)
	}()
	return p
}

func (p *stdioPeer) send(t *testing.T, line string) {
	t.Helper()
	go p.in.Write([]byte(line + "\n")) // a refused session stops reading
}

// answerID waits for the next answer and returns its id as written, or
// "" when the session ended first.
func (p *stdioPeer) answerID(t *testing.T) string {
	t.Helper()
	select {
	case a, ok := <-p.answers:
		if !ok {
			return ""
		}
		var m struct {
			ID json.RawMessage `json:"id"`
		}
		if err := json.Unmarshal([]byte(a), &m); err != nil {
			t.Fatalf("answer is not JSON: %q", a)
		}
		return string(m.ID)
	case err := <-p.done:
		p.done <- err
		return ""
	case <-time.After(10 * time.Second):
		t.Fatal("no answer and no end of the session")
	}
	return ""
}

// TestStdioRequestIDIsAnsweredAsSentOrRefused: the id rules of MCP-35
// hold on the stdio transport too.
//
// Attack: the HTTP endpoint refused an id the SDK would answer under
// another (1.5 answered as 1, 2^53+1 as 2^53, "\ud800" as "\ufffd", a
// batch repeating an id), but ServeStdio handed every line to the SDK
// unchecked: a host (or whatever writes to the agent's stdin) got an
// answer under an id it never sent, or none, while a tools/call ran.
//
// Should: each stdio message is checked as a POST body is (checkBody,
// one check for both transports); a valid id is answered under itself,
// and a message the SDK would misanswer ends the session with
// invalid_request_id before the SDK reads it, as the SDK ends a stdio
// session on a line it cannot read.
func TestStdioRequestIDIsAnsweredAsSentOrRefused(t *testing.T) {
	for _, bad := range []string{
		`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`,
		`{"jsonrpc":"2.0","i\u0064":-0,"method":"ping"}`,
		`{"jsonrpc":"2.0","id":"\ud800","method":"ping"}`,
		`[{"jsonrpc":"2.0","id":3,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`,
	} {
		t.Run(bad, func(t *testing.T) {
			p := serveStdioPipes(t, 1<<20)
			p.send(t, `{"jsonrpc":"2.0","id":7,"method":"ping"}`)
			if got := p.answerID(t); got != "7" {
				t.Fatalf("a ping with id 7 was answered under %q", got)
			}
			p.send(t, bad)
			if got := p.answerID(t); got != "" {
				t.Fatalf("answered under id %s", got)
			}
			select {
			case err := <-p.done:
				if amp.NameOf(err) != ErrInvalidRequestID {
					t.Fatalf("session ended with %v, want %s", err, ErrInvalidRequestID)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the session did not end")
			}
		})
	}
}

// TestStdioRequestIDCheckKeepsTheSDKFraming: the check reads the stream
// as the SDK does, so a host's ordinary session (an SDK client: initialize,
// tools/list, a call) and the SDK's own framing rules (a message followed
// by anything but a line end is refused) are as they were without it.
func TestStdioRequestIDCheckKeepsTheSDKFraming(t *testing.T) {
	e := newEnv(t, newStoreFile(t), agent.Rules{{Caller: "*", Prefix: "*"}})
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go e.bridge.ServeStdio(ctx, testPrincipal, &mcp.IOTransport{Reader: inR, Writer: outW})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, &mcp.IOTransport{Reader: outR, Writer: inW}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil || len(tools.Tools) == 0 {
		t.Fatalf("tools/list over stdio: %v, %v", tools, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tools.Tools[0].Name, Arguments: map[string]any{"text": "hi", "lang": "fr"}})
	if err != nil || res.IsError {
		t.Fatalf("tools/call over stdio: %+v, %v", res, err)
	}

	p := serveStdioPipes(t, 1<<20)
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping"}`+"\r")
	if got := p.answerID(t); got != "1" {
		t.Fatalf("a ping ended by CR LF was answered under %q", got)
	}
	p.send(t, `{"jsonrpc":"2.0","id":2,"method":"ping"} {"jsonrpc":"2.0","id":3,"method":"ping"}`)
	if got := p.answerID(t); got != "" {
		t.Fatalf("a message followed by a space was answered under %s", got)
	}
	// A message over the transport's line length ends the session.
	p = serveStdioPipes(t, 64)
	p.send(t, `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"x":"`+strings.Repeat("a", 100)+`"}}}`)
	if got := p.answerID(t); got != "" {
		t.Fatalf("a message over the line length was answered under %s", got)
	}
}
