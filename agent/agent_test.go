package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestInvokeValidationOrder pins RFC 004 §7.2: each case breaks step k and
// later steps, and must get step k's code.
func TestInvokeValidationOrder(t *testing.T) {
	e := newEnv(t)
	badParams := map[string]any{"code": 7}
	tests := []struct {
		name   string
		caller amp.Identity
		body   func() []byte
		code   amp.Code
	}{
		{"1 shape before policy", e.stranger, func() []byte { return []byte{0xa1, 0x61, 0x78, 0x01} }, amp.CodeBadRequest},
		{"2 coarse policy before identity", e.stranger, func() []byte { return invokeBody(t, "org.agentries.nope:1.0.0", badParams) }, amp.CodeUnauthorized},
		{"3 identity before version", e.caller, func() []byte { return invokeBody(t, "org.agentries.nope:9.0.0", badParams) }, amp.CodeCapabilityNotFound},
		{"4 capability policy before version", e.caller, func() []byte { return invokeBody(t, "org.other.thing:9.0.0", badParams) }, amp.CodeUnauthorized},
		{"5 version before schema", e.caller, func() []byte { return invokeBody(t, "org.agentries.code-review:9.0.0", badParams) }, amp.CodeVersionMismatch},
		{"6 schema", e.caller, func() []byte { return invokeBody(t, "org.agentries.code-review:2.1.0", badParams) }, amp.CodeSchemaViolation},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, reply := e.exchange(tt.caller, amp.TypeCapInvoke, tt.body())
			if got := errorOf(t, reply).Code; got != tt.code {
				t.Fatalf("got %d, want %d", got, tt.code)
			}
		})
	}
	if n := e.count("org.agentries.code-review:2.1.0").Load(); n != 0 {
		t.Fatalf("a handler ran %d times for refused invocations", n)
	}
}

// TestReplaySequential: a duplicate gets the byte-identical reply and the
// handler runs once (replay).
func TestReplaySequential(t *testing.T) {
	e := newEnv(t)
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	first, err := e.agent.Handle(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		again, err := e.agent.Handle(context.Background(), msg)
		if err != nil || !bytes.Equal(again, first) {
			t.Fatalf("duplicate %d: different reply (%v)", i, err)
		}
	}
	if n := e.count("org.agentries.code-review:2.1.0").Load(); n != 1 {
		t.Fatalf("handler ran %d times", n)
	}
	// Queries are answered byte-identically too.
	_, q := e.seal(e.caller, amp.TypeCapQuery, mustEncode(t, capability.Query{Filter: capability.Filter{Capability: "org.agentries.paging"}}))
	a, _ := e.agent.Handle(context.Background(), q)
	b, _ := e.agent.Handle(context.Background(), q)
	if !bytes.Equal(a, b) {
		t.Fatal("duplicate query got a different reply")
	}
}

func mustEncode(t testing.TB, v interface{ Encode() ([]byte, error) }) []byte {
	t.Helper()
	b, err := v.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestReplayConcurrent: duplicates arriving together run the handler once
// and all get the same bytes (replay, under -race).
func TestReplayConcurrent(t *testing.T) {
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
		time.Sleep(20 * time.Millisecond) // keep the first copy in flight
		return map[string]any{"issues": []any{}, "version": "slow"}, nil
	}))
	var runs atomic.Int64
	e.agent.handlers[capability.ID{Name: "org.agentries.code-review", Version: mustVersion(t, "2.1.0")}] = func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		time.Sleep(20 * time.Millisecond)
		return map[string]any{"issues": []any{}, "version": "slow"}, nil
	}
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	replies := make([][]byte, 32)
	var wg sync.WaitGroup
	for i := range replies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := e.agent.Handle(context.Background(), msg)
			if err != nil {
				t.Error(err)
			}
			replies[i] = r
		}()
	}
	wg.Wait()
	for _, r := range replies {
		if !bytes.Equal(r, replies[0]) {
			t.Fatal("concurrent duplicates got different replies")
		}
	}
	if runs.Load() != 1 {
		t.Fatalf("handler ran %d times for one message", runs.Load())
	}
}

// TestReplayAcrossRestart: the reply is durable; after the store is closed
// and reopened, a duplicate gets the same bytes and no handler runs.
func TestReplayAcrossRestart(t *testing.T) {
	e := newEnv(t)
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	first, err := e.agent.Handle(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	e.agent.Close()
	e.store.Close()
	s, err := resolver.Open(e.path, resolver.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	e.store = s
	var runs atomic.Int64
	cfg := e.cfg
	cfg.Store = s
	cfg.Handlers = map[string]Handler{"org.agentries.code-review:2.1.0": func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		return map[string]any{"issues": []any{}, "version": "after restart"}, nil
	}}
	a2, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	again, err := a2.Handle(context.Background(), msg)
	if err != nil || !bytes.Equal(again, first) {
		t.Fatalf("after restart: different reply (%v)", err)
	}
	if runs.Load() != 0 {
		t.Fatal("the handler ran again after a restart")
	}
}

// TestOutcomeUnknownAfterCrash: a ledger entry marked running without a
// reply (the process died while the handler ran) is never run again, and
// is answered by a terminal CAP_RESULT (RFC 004 §2.2), not an ERROR.
func TestOutcomeUnknownAfterCrash(t *testing.T) {
	e := newEnv(t)
	req, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	st, err := e.agent.Ledger().Start(e.caller.DID, req.ID, t0.Add(time.Hour))
	if err != nil || st.State != ledger.Fresh {
		t.Fatal(st.State, err)
	}
	if err := st.Ticket.Running(); err != nil {
		t.Fatal(err)
	}
	st.Ticket.Abandon() // the crash: running, never finished
	raw, err := e.agent.Handle(context.Background(), msg)
	if err != nil {
		t.Fatal(err)
	}
	res := resultOf(t, e.receive(e.caller, raw))
	if res.Status != capability.StatusError || res.Error == nil || res.Error.Code != amp.CodeInternalError || !contains(res.Error.Message, "interrupted") {
		t.Fatalf("got %+v; want a CAP_RESULT error 5001 outcome unknown", res)
	}
	again, _ := e.agent.Handle(context.Background(), msg)
	if !bytes.Equal(again, raw) || e.count("org.agentries.code-review:2.1.0").Load() != 0 {
		t.Fatal("the interrupted invocation ran, or its answer changed")
	}
}

// TestExactlyOneResultUnderLoad: every accepted invocation gets exactly one
// terminal CAP_RESULT, whatever its handler does, under parallel load,
// with handlers detached and inline (Config.InlineHandlers).
func TestExactlyOneResultUnderLoad(t *testing.T) {
	for _, inline := range []bool{false, true} {
		t.Run(fmt.Sprintf("inline=%v", inline), func(t *testing.T) { exactlyOneResultUnderLoad(t, inline) })
	}
}

func exactlyOneResultUnderLoad(t *testing.T, inline bool) {
	kinds := []string{"ok", "slow", "fail", "panic", "timeout", "bad-output"}
	var runs sync.Map
	h := func(ctx context.Context, p any) (any, error) {
		kind := p.(map[string]any)["code"].(string)
		c, _ := runs.LoadOrStore(kind, new(atomic.Int64))
		c.(*atomic.Int64).Add(1)
		switch kind {
		case "slow":
			time.Sleep(5 * time.Millisecond)
		case "fail":
			return nil, errors.New("backend /srv/secret exploded")
		case "panic":
			panic("boom")
		case "timeout":
			<-ctx.Done()
			time.Sleep(5 * time.Millisecond)
			return nil, ctx.Err()
		case "bad-output":
			return map[string]any{"nope": true}, nil
		}
		return map[string]any{"issues": []any{}, "version": "ok"}, nil
	}
	// 150 handlers of one caller at once: each reserves its largest
	// result in the caller's share (32 MiB / 256 KiB = 128 by default).
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", h), withConfig(func(c *Config) {
		c.InlineHandlers = inline
		c.LedgerLimits.ReplyReserve = 16 << 10
	}))
	want := map[string]struct {
		status string
		code   amp.Code
	}{"ok": {"success", 0}, "slow": {"success", 0}, "fail": {"error", 5001}, "panic": {"error", 5001},
		"timeout": {"error", 5003}, "bad-output": {"error", 5001}}
	const per = 25
	var wg sync.WaitGroup
	var results atomic.Int64
	for _, kind := range kinds {
		for i := 0; i < per; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				p, _ := amp.Marshal(map[string]any{"code": kind, "language": "go"})
				id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
				// Only the timeout kind gets a short deadline: under -race on
				// two cores the others must not time out by accident.
				timeout := uint64(10_000)
				if kind == "timeout" {
					timeout = 30
				}
				body, _ := capability.Invoke{ID: id, Params: p, TimeoutMS: &timeout}.Encode()
				_, reply := e.exchange(e.caller, amp.TypeCapInvoke, body)
				r := resultOf(t, reply)
				w := want[kind]
				if r.Status != w.status || (w.code != 0 && (r.Error == nil || r.Error.Code != w.code)) {
					t.Errorf("%s: status %s %+v", kind, r.Status, r.Error)
				}
				if r.Error != nil && contains(r.Error.Message, "secret") {
					t.Errorf("%s: the handler's error text leaked: %q", kind, r.Error.Message)
				}
				results.Add(1)
			}()
		}
	}
	wg.Wait()
	if results.Load() != int64(per*len(kinds)) {
		t.Fatalf("%d results for %d invocations", results.Load(), per*len(kinds))
	}
	for _, kind := range kinds {
		c, _ := runs.Load(kind)
		if c == nil || c.(*atomic.Int64).Load() != per {
			t.Fatalf("%s handler ran %v times, want %d", kind, c, per)
		}
	}
}

// TestFailClosedAfterRemoval: an invocation that worked fails closed with
// 5002 once its bundle is removed.
func TestFailClosedAfterRemoval(t *testing.T) {
	e := newEnv(t)
	c := e.client(e.caller, false)
	id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
	p, _ := amp.Marshal(goodParams)
	if _, _, err := c.Invoke(context.Background(), capability.Invoke{ID: id, Params: p}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Remove("org.agentries.core"); err != nil {
		t.Fatal(err)
	}
	_, ex, err := c.Invoke(context.Background(), capability.Invoke{ID: id, Params: p})
	if !errors.Is(err, amp.CodeUnavailable) {
		t.Fatalf("after removal: %v", err)
	}
	if ex.Attempts != 5 {
		t.Fatalf("a 5002 is retried (with the same message): %d attempts", ex.Attempts)
	}
	if e.count("org.agentries.code-review:2.1.0").Load() != 1 {
		t.Fatal("the handler ran without a verified schema")
	}
}

func TestHandlerErrors(t *testing.T) {
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
		return nil, amp.NewError(amp.CodeBadRequest, "the code is not go")
	}))
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	r := resultOf(t, reply)
	if r.Status != capability.StatusError || r.Error.Code != amp.CodeBadRequest || r.Error.Message != "the code is not go" {
		t.Fatalf("handler amp error: %+v", r.Error)
	}
}

func TestTimeoutBoundedByServer(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) { c.MaxTimeout = 20 * time.Millisecond }),
		withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
			time.Sleep(2 * time.Second) // ignores its context
			return map[string]any{"issues": []any{}, "version": "late"}, nil
		}))
	start := time.Now()
	p, _ := amp.Marshal(goodParams)
	id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
	long := uint64(3_600_000)
	body, _ := capability.Invoke{ID: id, Params: p, TimeoutMS: &long}.Encode()
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, body)
	r := resultOf(t, reply)
	if r.Error == nil || r.Error.Code != amp.CodeTimeout {
		t.Fatalf("got %+v", r)
	}
	// Unbounded, the handler's result ("late", after 2 s) would answer
	// within the caller's hour: the timeout above is what shows the
	// server's maximum bounded timeout_ms; the time is logged.
	t.Logf("answered %s after %v", r.Error.Code, time.Since(start))
}

// TestEncryptedRequestEncryptedReply: authcrypt both ways.
func TestEncryptedRequestEncryptedReply(t *testing.T) {
	e := newEnv(t)
	c := e.client(e.caller, true)
	id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
	p, _ := amp.Marshal(goodParams)
	r, ex, err := c.Invoke(context.Background(), capability.Invoke{ID: id, Params: p})
	if err != nil || r.Status != capability.StatusSuccess {
		t.Fatalf("%v %+v", err, r)
	}
	if !ex.Request.Encrypted() || !ex.Reply.Encrypted() {
		t.Fatal("an encrypted request got a plaintext reply")
	}
}

func TestControlMessages(t *testing.T) {
	e := newEnv(t)
	if err := e.client(e.caller, false).Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	hello := func(vs ...string) *amp.Message {
		b, _ := amp.Marshal(amp.HelloBody{Versions: vs})
		_, r := e.exchange(e.stranger, amp.TypeHello, b)
		return r
	}
	if r := hello("2.0", "1.0"); r.Type != amp.TypeHelloAck {
		t.Fatalf("hello: %s", r.Type)
	} else if ack, _ := amp.DecodeHelloAck(r.Body); ack.Selected != "1.0" {
		t.Fatalf("selected %q", ack.Selected)
	}
	if r := hello("2.0"); r.Type != amp.TypeHelloReject {
		t.Fatalf("hello 2.0: %s", r.Type)
	}
	_, r := e.exchange(e.caller, amp.TypeMessage, nil)
	if errorOf(t, r).Code != amp.CodeUnknownType {
		t.Fatal("an unserved family is not 1005")
	}
}

// TestForgedSenderGetsNoSignedReply: a message whose signature does not
// verify, or whose sender's key cannot be found, gets no agent-signed
// answer (threat: anyone obtaining agent-signed ERRORs addressed to any
// DID, one junk request each): Handle returns an *UnverifiedError and no
// bytes, and the forged copy does not poison the ledger.
func TestForgedSenderGetsNoSignedReply(t *testing.T) {
	e := newEnv(t)
	req, msg := e.seal(e.caller, amp.TypePing, nil)
	forged := bytes.Replace(msg, req.Sig, append([]byte{req.Sig[0] ^ 1}, req.Sig[1:]...), 1)
	// A sender whose key cannot be found: a did:web without a document.
	ghost := identity(t, 77)
	ghost.DID = "did:web:ghost.example"
	s, err := amp.NewSender(amp.SenderConfig{Identity: ghost, Rand: rand.Reader, Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	_, unknownKey, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(e.provider.DID)})
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"forged signature": forged, "sender key not found": unknownKey, "garbage": []byte("garbage")} {
		out, err := e.agent.Handle(context.Background(), data)
		var ue *UnverifiedError
		if out != nil || !errors.As(err, &ue) {
			t.Fatalf("%s: %d reply bytes, error %v; want no reply and an UnverifiedError", name, len(out), err)
		}
	}
	// The forged copy did not poison the ledger: the genuine one is served.
	raw, _ := e.agent.Handle(context.Background(), msg)
	if e.receive(e.caller, raw).Type != amp.TypePong {
		t.Fatal("the genuine message after a forged copy was not answered")
	}
	if out, err := e.agent.Handle(context.Background(), []byte("garbage")); out != nil || !errors.Is(err, amp.CodeInvalidMessage) {
		t.Fatalf("garbage: %v %v", out, err)
	}
	// A ttl longer than the agent keeps replies is refused.
	s, _ = amp.NewSender(amp.SenderConfig{Identity: e.caller, Rand: rand.Reader, Now: e.clock.Now})
	_, long, _ := s.Seal(context.Background(), amp.Draft{Type: amp.TypePing, To: amp.To(e.provider.DID), TTL: 30 * 24 * time.Hour})
	raw, _ = e.agent.Handle(context.Background(), long)
	if errorOf(t, e.receive(e.caller, raw)).Code != amp.CodeInvalidTimestamp {
		t.Fatal("an excessive ttl was accepted")
	}
}

func TestNewRefusesMisconfiguration(t *testing.T) {
	e := newEnv(t)
	base := e.cfg
	tests := map[string]func(c *Config){
		"no store":                            func(c *Config) { c.Store = nil },
		"no policy":                           func(c *Config) { c.Policy = nil },
		"no clock":                            func(c *Config) { c.Now = nil },
		"no randomness":                       func(c *Config) { c.Rand = nil },
		"handler for a missing capability":    func(c *Config) { c.Handlers = map[string]Handler{"org.agentries.code-review:9.9.9": e.echo("x")} },
		"handler id that is not an id":        func(c *Config) { c.Handlers = map[string]Handler{"code-review": e.echo("x")} },
		"did:key of another key":              func(c *Config) { c.Identity.DID = e.caller.DID },
		"did:web without a document":          func(c *Config) { c.Identity.DID = "did:web:nobody.example.org" },
		"agreement key not in the document":   func(c *Config) { c.Identity.Agreement = e.caller.Agreement },
		"signing key missing from identity":   func(c *Config) { c.Identity.SigningKey = nil },
		"did with a fragment as the identity": func(c *Config) { c.Identity.DID += "#k" },
	}
	for name, mod := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := base
			mod(&cfg)
			if a, err := New(cfg); err == nil || a != nil {
				t.Fatal("misconfiguration accepted")
			}
		})
	}
}

// TestDIDWebIdentityFromStore: an agent whose DID is a did:web with its
// document in an imported bundle; a client verifies its replies with the
// same document (amp.DIDResolver over the store).
func TestDIDWebIdentityFromStore(t *testing.T) {
	e := newEnv(t)
	data, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	pubPEM, _ := os.ReadFile(filepath.Join("..", "testdata", "bundles", "keys", "TEST-ONLY-example-publisher.pub.pem"))
	pub, _ := keyfile.ParsePublicPEM(pubPEM)
	must(t, e.store.TrustAdd("example-pub", pub, []string{"org.example"}))
	e.importBundle(data)
	keyPEM, _ := os.ReadFile(filepath.Join("..", "testdata", "bundles", "keys", "TEST-ONLY-translator-agent.key.pem"))
	keys, err := keyfile.ParsePrivate(keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	id, err := keys.Identity("did:web:translator.example.org")
	if err != nil {
		t.Fatal(err)
	}
	cfg := e.cfg
	cfg.Identity = id
	cfg.Handlers = map[string]Handler{"org.example.translate.text:2.1.0": func(ctx context.Context, p any) (any, error) {
		return map[string]any{"text": "hallo", "detected_source": "en"}, nil
	}}
	cfg.Policy = Rules{{Caller: "*", Prefix: "org.example"}}
	cfg.Ledger = memoryLedger(t, e.clock.Now, ledger.Limits{})
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Identity: e.caller, Peer: id.DID, Transport: client.Loopback(a), DIDs: e.store,
		Now: e.clock.Now, Rand: rand.Reader, Encrypt: true})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := amp.Marshal(map[string]any{"text": "hello", "target": "de"})
	r, ex, err := c.Invoke(context.Background(), capability.Invoke{Capability: "org.example.translate.text",
		Negotiate: &capability.NegotiateHints{Preferred: mustVersion(t, "2.2.0"), Acceptable: []capability.Version{mustVersion(t, "2.1.0")}}, Params: p})
	if err != nil || r.Status != capability.StatusSuccess || !ex.Reply.Encrypted() {
		t.Fatalf("%v %+v", err, r)
	}
}

// TestClientRetry: delivery failures are retried with the same message
// bytes, with backoff and jitter within RFC 001 §16.3's bounds.
func TestClientRetry(t *testing.T) {
	e := newEnv(t)
	var sent [][]byte
	fails := 2
	tr := client.TransportFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
		sent = append(sent, msg)
		if fails > 0 {
			fails--
			return nil, amp.NewError(amp.CodeEndpointUnreachable, "connection refused")
		}
		return e.agent.Handle(ctx, msg)
	})
	var waits []time.Duration
	c, err := client.New(client.Config{Identity: e.caller, Peer: e.provider.DID, Transport: tr, Now: e.clock.Now, Rand: rand.Reader,
		Retry: client.Retry{Base: time.Second, Max: 60 * time.Second, Sleep: func(ctx context.Context, d time.Duration) error { waits = append(waits, d); return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Ping(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(sent) != 3 || !bytes.Equal(sent[0], sent[2]) {
		t.Fatalf("%d attempts; the same message each time: %v", len(sent), len(sent) == 3 && bytes.Equal(sent[0], sent[2]))
	}
	for i, w := range waits {
		base := time.Second << i
		if w < base/2 || w >= base {
			t.Fatalf("wait %d = %v, want within [%v, %v)", i, w, base/2, base)
		}
	}
	// A non-retryable failure is not retried.
	sent = nil
	c2, _ := client.New(client.Config{Identity: e.caller, Peer: e.provider.DID, Now: e.clock.Now, Rand: rand.Reader,
		Transport: client.TransportFunc(func(ctx context.Context, msg []byte) ([]byte, error) {
			sent = append(sent, msg)
			return nil, amp.NewError(amp.CodeUnauthorized, "no")
		})})
	if err := c2.Ping(context.Background()); !errors.Is(err, amp.CodeUnauthorized) || len(sent) != 1 {
		t.Fatalf("%v after %d attempts", err, len(sent))
	}
}

// TestSweep: invocations are kept durably until they expire, then swept;
// PINGs are never written durably.
func TestSweep(t *testing.T) {
	e := newEnv(t)
	for i := 0; i < 5; i++ {
		e.exchange(e.caller, amp.TypePing, nil)
	}
	if n := e.agent.Ledger().Usage().Entries; n != 0 {
		t.Fatalf("%d durable ledger entries for pings", n)
	}
	for i := 0; i < 3; i++ {
		e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	}
	if n := e.agent.Ledger().Usage().Entries; n != 3 {
		t.Fatalf("%d durable ledger entries for 3 invocations", n)
	}
	e.clock.Add(25 * time.Hour)
	if n, err := e.agent.Sweep(); err != nil || n != 3 || e.agent.Ledger().Usage().Entries != 0 {
		t.Fatalf("swept %d (%v), %d left", n, err, e.agent.Ledger().Usage().Entries)
	}
}

func TestPolicyRules(t *testing.T) {
	rs := Rules{}
	for _, s := range []string{"*=org.example.", "did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th=com.acme.geo.distance"} {
		r, err := ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	for _, bad := range []string{"", "x", "=org.example", "*=", "alice=org.example", "*=Org.Example"} {
		if _, err := ParseRule(bad); err == nil {
			t.Errorf("rule %q accepted", bad)
		}
	}
	dk := "did:key:z6MkmjY8GnV5i9YTDtPETC2uUAW6ejw3nk5mXF5yci5ab7th"
	cases := []struct {
		caller, name string
		want         bool
	}{
		{"did:key:other", "org.example.x", true},
		{"did:key:other", "org.examples.x", false},
		{"did:key:other", "com.acme.geo.distance", false},
		{dk, "com.acme.geo.distance", true},
		{dk + "#frag", "com.acme.geo.distance", true},
		{dk, "com.acme.geo.geocode", false},
	}
	for _, c := range cases {
		if got := rs.AllowCapability(c.caller, c.name); got != c.want {
			t.Errorf("%s %s: %v", c.caller, c.name, got)
		}
	}
	if (Rules{}).AllowCaller("did:key:x") {
		t.Fatal("empty rules allowed a caller")
	}
}
