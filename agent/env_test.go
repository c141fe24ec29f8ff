package agent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/resolver"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func seedKey(seed byte) ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, 32))
}

func identity(t testing.TB, seed byte) amp.Identity {
	t.Helper()
	k := seedKey(seed)
	x, err := amp.AgreementKeyFromEd25519(k)
	if err != nil {
		t.Fatal(err)
	}
	return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k, Agreement: x}
}

// clock is a settable clock shared by the agent and its clients.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time      { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

const (
	codeReviewIn  = `{"type":"object","required":["code","language"],"properties":{"code":{"type":"string","maxLength":10000},"language":{"type":"string","minLength":1}},"additionalProperties":false}`
	codeReviewOut = `{"type":"object","required":["issues","version"],"properties":{"issues":{"type":"array"},"version":{"type":"string"}}}`
	anyObject     = `{"type":"object"}`
)

// testBundle builds a bundle of capabilities id -> (input, output) schema.
func testBundle(t testing.TB, key ed25519.PrivateKey, id string, version uint64, caps map[string][2]string, aliases map[string]string) []byte {
	t.Helper()
	d := &bundle.Draft{BundleID: id, Version: version, CreatedAt: t0.Add(-time.Hour), Aliases: aliases}
	for cid, schemas := range caps {
		c, err := capability.ParseID(cid)
		if err != nil {
			t.Fatal(err)
		}
		dir := "capabilities/" + c.Name + "/" + c.Version.String() + "/"
		d.Artifacts = append(d.Artifacts,
			bundle.BytesSource(dir+"input.schema.json", bundle.MediaTypeSchema, []byte(schemas[0])),
			bundle.BytesSource(dir+"output.schema.json", bundle.MediaTypeSchema, []byte(schemas[1])))
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: c.Name, Version: c.Version,
			InputSchema:  capability.SchemaRef{ArtifactKey: dir + "input.schema.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: dir + "output.schema.json"}})
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// env is a provider agent over a store, with an authorized caller and a
// stranger.
type env struct {
	t        testing.TB
	clock    *clock
	store    *resolver.Store
	path     string
	agent    *Agent
	provider amp.Identity
	caller   amp.Identity
	stranger amp.Identity
	calls    sync.Map // capability id -> *atomic.Int64
	handlers map[string]Handler
	cfg      Config
}

type envOption func(*env)

func withHandler(id string, h Handler) envOption { return func(e *env) { e.handlers[id] = h } }
func withConfig(f func(*Config)) envOption       { return func(e *env) { f(&e.cfg) } }

var agentriesVersions = []string{"1.0.0", "1.1.0", "2.0.0", "2.1.0", "3.0.0"}

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	e := &env{t: t, clock: &clock{t: t0}, provider: identity(t, 30), caller: identity(t, 31), stranger: identity(t, 32), handlers: map[string]Handler{}}
	e.path = filepath.Join(t.TempDir(), "store.db")
	s, err := resolver.Open(e.path, resolver.Options{Now: e.clock.Now, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	e.store = s
	t.Cleanup(func() { e.store.Close() })
	pubA, pubB := seedKey(21), seedKey(22)
	must(t, s.TrustAdd("agentries", pubA.Public().(ed25519.PublicKey), []string{"org.agentries"}))
	must(t, s.TrustAdd("example", pubB.Public().(ed25519.PublicKey), []string{"com.example"}))
	caps := map[string][2]string{
		"org.agentries.code-review:2.0.0": {codeReviewIn, codeReviewOut},
		"org.agentries.code-review:2.1.0": {codeReviewIn, codeReviewOut},
		"org.agentries.translate:1.0.0":   {anyObject, anyObject},
	}
	for _, v := range agentriesVersions {
		caps["org.agentries.paging:"+v] = [2]string{anyObject, anyObject}
	}
	e.importBundle(testBundle(t, pubA, "org.agentries.core", 1, caps, map[string]string{"code-review": "org.agentries.code-review"}))
	e.importBundle(testBundle(t, pubB, "com.example.review", 1, map[string][2]string{"com.example.code-review:1.0.0": {codeReviewIn, codeReviewOut}}, nil))
	for id := range caps {
		e.handlers[id] = e.echo(id)
	}
	e.handlers["com.example.code-review:1.0.0"] = e.echo("com.example.code-review:1.0.0")
	e.cfg = Config{Core: Core{Identity: e.provider, Store: s, Now: e.clock.Now, Rand: rand.Reader,
		Policy: Rules{{Caller: e.caller.DID, Prefix: "org.agentries"}, {Caller: e.caller.DID, Prefix: "com.example."}}}}
	for _, o := range opts {
		o(e)
	}
	e.cfg.Handlers = e.handlers
	e.agent, err = New(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.agent.Close() })
	return e
}

// memoryLedger is a non-durable ledger for tests and benchmarks.
func memoryLedger(t testing.TB, now func() time.Time, lim ledger.Limits) *ledger.Ledger {
	t.Helper()
	l, err := ledger.New(ledger.NewMemory(lim), ledger.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// withMemoryLedger gives the agent a non-durable ledger.
func withMemoryLedger() envOption {
	return func(e *env) { e.cfg.Ledger = memoryLedger(e.t, e.clock.Now, ledger.Limits{}) }
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func (e *env) importBundle(data []byte) {
	e.t.Helper()
	if _, err := e.store.Import(context.Background(), bytes.NewReader(data), resolver.ImportOptions{}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) count(id string) *atomic.Int64 {
	c, _ := e.calls.LoadOrStore(id, new(atomic.Int64))
	return c.(*atomic.Int64)
}

// echo is a handler that counts its calls and returns a valid result
// naming the capability id that ran.
func (e *env) echo(id string) Handler {
	return func(ctx context.Context, params any) (any, error) {
		e.count(id).Add(1)
		return map[string]any{"issues": []any{}, "version": id}, nil
	}
}

// client returns a client of the provider for id, over the loopback.
func (e *env) client(id amp.Identity, encrypt bool) *client.Client {
	e.t.Helper()
	c, err := client.New(client.Config{Identity: id, Peer: e.provider.DID, Transport: client.Loopback(e.agent), Now: e.clock.Now,
		Rand: rand.Reader, Encrypt: encrypt, Retry: client.Retry{Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// seal signs a request from id to the provider.
func (e *env) seal(id amp.Identity, typ amp.Type, body []byte) (*amp.Message, []byte) {
	e.t.Helper()
	return e.sealTTL(id, typ, body, 0)
}

// sealTTL is seal with the given ttl (0: the default ttl; negative:
// ttl = 0).
func (e *env) sealTTL(id amp.Identity, typ amp.Type, body []byte, ttl time.Duration) (*amp.Message, []byte) {
	e.t.Helper()
	s, err := amp.NewSender(amp.SenderConfig{Identity: id, Rand: rand.Reader, Now: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	m, b, err := s.Seal(context.Background(), amp.Draft{Type: typ, To: amp.To(e.provider.DID), Body: body, TTL: ttl})
	if err != nil {
		e.t.Fatal(err)
	}
	return m, b
}

// receive validates a reply as the caller would.
func (e *env) receive(id amp.Identity, reply []byte) *amp.Message {
	e.t.Helper()
	r, err := amp.NewReceiver(amp.ReceiverConfig{Now: e.clock.Now, AgreementKeys: []*amp.AgreementKey{id.Agreement}})
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := r.Receive(context.Background(), reply)
	if err != nil {
		e.t.Fatalf("reply does not verify: %v", err)
	}
	return m
}

// exchange sends body as typ from id and returns the verified reply.
func (e *env) exchange(id amp.Identity, typ amp.Type, body []byte) (*amp.Message, *amp.Message) {
	e.t.Helper()
	req, msg := e.seal(id, typ, body)
	raw, err := e.agent.Handle(context.Background(), msg)
	if err != nil {
		e.t.Fatalf("handle: %v", err)
	}
	reply := e.receive(id, raw)
	if !bytes.Equal(reply.ReplyTo, req.ID[:]) || reply.From != e.provider.DID || !reply.To.Contains(id.DID) {
		e.t.Fatalf("reply not correlated or addressed: reply_to %x, from %s", reply.ReplyTo, reply.From)
	}
	return req, reply
}

// errorOf decodes an ERROR reply.
func errorOf(t testing.TB, m *amp.Message) amp.ErrorBody {
	t.Helper()
	if m.Type != amp.TypeError {
		t.Fatalf("reply is %s, want ERROR", m.Type)
	}
	b, err := amp.DecodeError(m.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func resultOf(t testing.TB, m *amp.Message) capability.Result {
	t.Helper()
	if m.Type != amp.TypeCapResult {
		if m.Type == amp.TypeError {
			b, _ := amp.DecodeError(m.Body)
			t.Fatalf("reply is ERROR %d %s, want CAP_RESULT", b.Code, b.Message)
		}
		t.Fatalf("reply is %s, want CAP_RESULT", m.Type)
	}
	r, err := capability.DecodeResult(m.Body)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func invokeBody(t testing.TB, id string, params any) []byte {
	t.Helper()
	p, err := amp.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	cid, err := capability.ParseID(id)
	if err != nil {
		t.Fatal(err)
	}
	b, err := capability.Invoke{ID: cid, Params: p}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

var goodParams = map[string]any{"code": "func main() {}", "language": "go"}

// resultVersion returns which capability id produced a success result.
func resultVersion(t testing.TB, r capability.Result) string {
	t.Helper()
	var v map[string]any
	if err := amp.Unmarshal(r.Result, &v); err != nil {
		t.Fatal(err)
	}
	return fmt.Sprint(v["version"])
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }
