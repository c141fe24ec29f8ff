package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// paramsEnv is an agent that takes params streams, with small messages
// (64 KiB), a small spool threshold and its own spool directory, and a
// translate handler that records the length of the text it was given.
func paramsEnv(t *testing.T, lim *ParamStreamLimits, opts ...envOption) (*env, string, func() []int) {
	spool := t.TempDir()
	var mu sync.Mutex
	var got []int
	e := newEnv(t, withMemoryLedger(), withConfig(func(c *Config) {
		c.Limits = amp.Limits{MaxMessageSize: 64 << 10}
		c.StreamLimits = StreamLimits{SpoolThreshold: 4 << 10, SpoolDir: spool}
		c.ParamStreams = lim
		c.Policy = append(c.Policy.(Rules), Rule{Caller: "*", Prefix: "org.nothing."})
	}), withHandler("org.agentries.translate:1.0.0", func(ctx context.Context, params any) (any, error) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, len(params.(map[string]any)["text"].(string)))
		return map[string]any{}, nil
	}), func(e *env) {
		for _, o := range opts {
			o(e)
		}
	})
	return e, spool, func() []int { mu.Lock(); defer mu.Unlock(); return append([]int(nil), got...) }
}

// reasonOf is the reason in the details of a signed ERROR (the name of a
// stream or params refusal, docs/SPEC-DECISIONS.md STREAM-4), or the
// error's name when it has none.
func reasonOf(t *testing.T, err error) amp.ErrName {
	t.Helper()
	e := amp.AsError(err)
	if e == nil {
		return ""
	}
	if raw, ok := e.Details.(cbor.RawMessage); ok && len(raw) > 0 {
		var d map[string]any
		must(t, amp.Unmarshal(raw, &d))
		if r, ok := d["reason"].(string); ok {
			return amp.ErrName(r)
		}
	}
	return e.Name
}

func translateInvoke(t *testing.T) capability.Invoke {
	id, err := capability.ParseID("org.agentries.translate:1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	return capability.Invoke{ID: id}
}

func bigText(t *testing.T, n int) []byte {
	p, err := amp.Marshal(map[string]any{"text": strings.Repeat("x", n)})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestParamsTooLargeForOneMessageArriveByStream: params five times the
// message limit cannot travel inline, and do as a verified stream followed
// by a CAP_INVOKE naming it, over the loopback and over HTTP, encrypted or
// not; the handler gets exactly the streamed params, and nothing is left
// in the spool directory or waiting.
func TestParamsTooLargeForOneMessageArriveByStream(t *testing.T) {
	e, spool, got := paramsEnv(t, &ParamStreamLimits{})
	url, _ := serveHTTP(t, e, amphttp.Options{MaxBody: 1 << 20})
	params := bigText(t, 320<<10)
	for _, c := range []struct {
		name string
		cl   *client.Client
	}{
		{"loopback", e.client(e.caller, false)},
		{"loopback encrypted", e.client(e.caller, true)},
		{"http", httpClient(t, e, url, e.caller, false)},
	} {
		t.Run(c.name, func(t *testing.T) {
			inline := translateInvoke(t)
			inline.Params = params
			if _, _, err := c.cl.Invoke(context.Background(), inline); err == nil {
				t.Fatal("params over the message limit went inline")
			}
			before := len(got())
			r, _, err := c.cl.InvokeLarge(context.Background(), translateInvoke(t), params, 16<<10)
			if err != nil {
				t.Fatal(err)
			}
			if r.Status != capability.StatusSuccess {
				t.Fatalf("status %s", r.Status)
			}
			if g := got(); len(g) != before+1 || g[before] != 320<<10 {
				t.Fatalf("the handler got %v", g)
			}
		})
	}
	if n := e.agent.WaitingParams(); n != 0 {
		t.Fatalf("%d params still waiting", n)
	}
	if left, _ := os.ReadDir(spool); len(left) != 0 {
		t.Fatalf("spool files left: %v", left)
	}
}

// TestParamsStreamCannotBeBorrowedForgedOrReused: a CAP_INVOKE runs only
// on params its own sender streamed, with the SHA-256 it names, once; a
// streamed params that break the input schema are refused like inline
// ones; params next to a params_stream are refused. Nothing runs in any
// of these cases.
func TestParamsStreamCannotBeBorrowedForgedOrReused(t *testing.T) {
	e, _, got := paramsEnv(t, &ParamStreamLimits{})
	ctx := context.Background()
	caller, stranger := e.client(e.caller, false), e.client(e.stranger, false)
	params := bigText(t, 100<<10)
	stream := func(c *client.Client, content []byte) string {
		t.Helper()
		id, _, err := c.SendStream(ctx, client.Stream{ContentType: capability.ParamsContentType, Size: uint64(len(content)), ChunkSize: 32 << 10}, bytes.NewReader(content))
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	ref := func(id string, content []byte) capability.Invoke {
		inv, err := translateInvoke(t).WithParamsStream(id, content)
		if err != nil {
			t.Fatal(err)
		}
		return inv
	}
	strangers := stream(stranger, params)
	mine := stream(caller, params)
	withParams := ref(mine, params)
	withParams.Params, _ = amp.Marshal(map[string]any{"text": "inline"})
	other := append([]byte(nil), params...)
	other[len(other)-1] = 'y'
	for _, c := range []struct {
		name string
		inv  capability.Invoke
		want amp.ErrName
	}{
		{"another sender's stream", ref(strangers, params), "unknown_params_stream"},
		{"other content than streamed", ref(mine, other), "params_stream_mismatch"},
		{"inline params next to the stream", withParams, "bad_request"},
		{"a stream never sent", ref("nope", params), "unknown_params_stream"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, _, err := caller.Invoke(ctx, c.inv)
			if reasonOf(t, err) != c.want {
				t.Fatalf("got %v, want %s", err, c.want)
			}
		})
	}
	if _, _, err := caller.Invoke(ctx, ref(mine, params)); err != nil {
		t.Fatalf("the real reference after the refusals: %v", err)
	}
	if _, _, err := caller.Invoke(ctx, ref(mine, params)); reasonOf(t, err) != "unknown_params_stream" {
		t.Fatalf("params used twice: %v", err)
	}
	// Streamed params are validated like inline ones.
	bad, _ := amp.Marshal(map[string]any{"code": 7})
	id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
	inv, _ := capability.Invoke{ID: id}.WithParamsStream(stream(caller, bad), bad)
	if _, _, err := caller.Invoke(ctx, inv); !errors.Is(err, amp.CodeSchemaViolation) {
		t.Fatalf("schema-violating streamed params: %v", err)
	}
	if g := got(); len(g) != 1 {
		t.Fatalf("the handler ran %d times", len(g))
	}
}

// TestParamsStreamBounds: a params stream over MaxSize is refused at
// STREAM_START for good; beyond PerSender waiting params the STREAM_END is
// refused retryably; waiting params are dropped after Keep; an agent
// without ParamStreams refuses a params stream at STREAM_START and a
// params_stream reference.
func TestParamsStreamBounds(t *testing.T) {
	ctx := context.Background()
	small := bigText(t, 10<<10)
	send := func(c *client.Client, content []byte) (string, error) {
		id, _, err := c.SendStream(ctx, client.Stream{ContentType: capability.ParamsContentType, Size: uint64(len(content)), ChunkSize: 8 << 10}, bytes.NewReader(content))
		return id, err
	}
	t.Run("over MaxSize", func(t *testing.T) {
		e, _, _ := paramsEnv(t, &ParamStreamLimits{MaxSize: 8 << 10})
		if _, err := send(e.client(e.caller, false), small); reasonOf(t, err) != "limit_exceeded" || amp.CodeOf(err).Retryable() {
			t.Fatalf("oversize params stream: %v", err)
		}
	})
	t.Run("per sender", func(t *testing.T) {
		e, _, _ := paramsEnv(t, &ParamStreamLimits{PerSender: 1})
		c := e.client(e.caller, false)
		if _, err := send(c, small); err != nil {
			t.Fatal(err)
		}
		cl, err := client.New(client.Config{Identity: e.caller, Peer: e.provider.DID, Transport: client.Loopback(e.agent), Now: e.clock.Now,
			Rand: rand.Reader, Retry: client.Retry{MaxAttempts: 1}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := send(cl, small); reasonOf(t, err) != "params_budget_exceeded" || !amp.CodeOf(err).Retryable() {
			t.Fatalf("second waiting params of one sender: %v", err)
		}
	})
	t.Run("kept only for Keep", func(t *testing.T) {
		e, spool, _ := paramsEnv(t, &ParamStreamLimits{Keep: time.Minute})
		c := e.client(e.caller, false)
		id, err := send(c, small)
		if err != nil {
			t.Fatal(err)
		}
		e.clock.Add(2 * time.Minute)
		inv, _ := translateInvoke(t).WithParamsStream(id, small)
		if _, _, err := c.Invoke(ctx, inv); reasonOf(t, err) != "unknown_params_stream" {
			t.Fatalf("params after Keep: %v", err)
		}
		if left, _ := os.ReadDir(spool); len(left) != 0 {
			t.Fatalf("spool files left: %v", left)
		}
	})
	t.Run("not enabled", func(t *testing.T) {
		var r received
		e := newEnv(t, withConfig(func(c *Config) { c.Streams = r.handler }))
		c := e.client(e.caller, false)
		if _, err := send(c, small); reasonOf(t, err) != "stream_not_accepted" {
			t.Fatalf("params stream to an agent without ParamStreams: %v", err)
		}
		inv, _ := translateInvoke(t).WithParamsStream("x", small)
		if _, _, err := c.Invoke(ctx, inv); reasonOf(t, err) != "params_stream_not_served" {
			t.Fatalf("params_stream reference to an agent without ParamStreams: %v", err)
		}
	})
}

// lossyOneWay is a OneWay transport into an agent that loses the STREAM_DATA
// of index lose the first time it is sent (a connection that died under a
// send-only frame).
type lossyOneWay struct {
	a    *Agent
	recv *amp.Receiver
	lose uint64
	mu   sync.Mutex
	lost bool
}

func (l *lossyOneWay) RoundTrip(ctx context.Context, msg []byte) ([]byte, error) {
	return l.a.Handle(ctx, msg)
}

func (l *lossyOneWay) Send(ctx context.Context, msg []byte) error {
	m, err := l.recv.Receive(ctx, msg)
	if err == nil && m.Type == amp.TypeStreamData {
		if d, err := amp.DecodeStreamData(m.Body); err == nil && d.Index == l.lose {
			l.mu.Lock()
			first := !l.lost
			l.lost = true
			l.mu.Unlock()
			if first {
				return nil
			}
		}
	}
	_, err = l.a.Handle(ctx, msg)
	return err
}

// TestStreamedParamsSurviveALostChunk: a chunk lost on a send-only path
// shows in the STREAM_END's answer (missing_chunks); the client sends the
// chunks again once and the invocation runs, on the right params.
func TestStreamedParamsSurviveALostChunk(t *testing.T) {
	e, _, got := paramsEnv(t, &ParamStreamLimits{})
	recv, err := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Identity: e.caller, Peer: e.provider.DID, Transport: &lossyOneWay{a: e.agent, recv: recv, lose: 2},
		Now: e.clock.Now, Rand: rand.Reader, Retry: client.Retry{Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.InvokeLarge(context.Background(), translateInvoke(t), bigText(t, 100<<10), 16<<10); err != nil {
		t.Fatal(err)
	}
	if g := got(); len(g) != 1 || g[0] != 100<<10 {
		t.Fatalf("the handler got %v", g)
	}
}
