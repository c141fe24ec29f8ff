package etcdledger_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger"
	"github.com/ampbundle/ampbundle/agent/ledger/etcdledger/etcdtest"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// capID is the one capability of the fleet's agents.
const capID = "org.example.fleet.run:1.0.0"

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

// fleetBundle is the signed bundle every agent's registry imports.
func fleetBundle(t testing.TB) []byte {
	t.Helper()
	c, err := capability.ParseID(capID)
	if err != nil {
		t.Fatal(err)
	}
	dir := "capabilities/" + c.Name + "/" + c.Version.String() + "/"
	obj := []byte(`{"type":"object"}`)
	d := &bundle.Draft{BundleID: "org.example.fleet", Version: 1, CreatedAt: time.Now().Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource(dir+"input.schema.json", bundle.MediaTypeSchema, obj),
			bundle.BytesSource(dir+"output.schema.json", bundle.MediaTypeSchema, obj)},
		Capabilities: []capability.Descriptor{{Name: c.Name, Version: c.Version,
			InputSchema: capability.SchemaRef{ArtifactKey: dir + "input.schema.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: dir + "output.schema.json"}}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{seedKey(21)}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// node is one agent of a fleet: its own registry, the shared ledger.
type node struct {
	agent *agent.Agent
	store *etcdledger.Store
}

// newNode builds an agent with identity 30 over a registry of its own in
// dir and a ledger on the cluster at endpoints/prefix; h is its handler.
func newNode(t testing.TB, dir string, endpoints []string, prefix string, o etcdledger.Options, h agent.Handler) *node {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	reg, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Now: time.Now, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { reg.Close() })
	if err := reg.TrustAdd("fleet", seedKey(21).Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Import(context.Background(), bytes.NewReader(fleetBundle(t)), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	o.Endpoints, o.Prefix, o.Now = endpoints, prefix, time.Now
	st, err := etcdledger.Open(o)
	if err != nil {
		t.Fatal(err)
	}
	led, err := ledger.New(st, ledger.Options{Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: identity(t, 30), Store: reg, Now: time.Now, Rand: rand.Reader, Ledger: led,
		Handlers: map[string]agent.Handler{capID: h}, Policy: agent.Rules{{Caller: "*", Prefix: "org.example."}}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); led.Close() })
	return &node{agent: a, store: st}
}

// eventually polls cond until it holds, failing the test with what
// after etcdtest.Settle: a wait for etcd or a background goroutine to
// reach a state, bounded, never a fixed sleep.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(etcdtest.Settle); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not after %v", what, etcdtest.Settle)
		}
	}
}

// startRetrying is l.Start, again after each retryable refusal (an etcd
// call slower than its OpTimeout on a loaded machine), as the sender's
// retry would: any other error fails the test, and so does a refusal
// that lasts etcdtest.Settle.
func startRetrying(t testing.TB, l *ledger.Ledger, sender string, id [16]byte, expires time.Time) ledger.Start {
	t.Helper()
	for deadline := time.Now().Add(etcdtest.Settle); ; time.Sleep(50 * time.Millisecond) {
		st, err := l.Start(sender, id, expires)
		if err == nil {
			return st
		}
		if !amp.AsError(err).Code.Retryable() || time.Now().After(deadline) {
			t.Fatalf("start: %v", err)
		}
	}
}

// counting is a handler that counts its runs and answers its params.
func counting(runs *atomic.Int64) agent.Handler {
	return func(ctx context.Context, params any) (any, error) {
		runs.Add(1)
		return map[string]any{"echo": params}, nil
	}
}

// invoke seals a CAP_INVOKE of capID from the caller (seed 31) to the
// fleet's identity (seed 30), with params and ttl.
func invoke(t testing.TB, params map[string]any, ttl time.Duration) (*amp.Message, []byte) {
	t.Helper()
	p, err := amp.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	cid, _ := capability.ParseID(capID)
	body, err := capability.Invoke{ID: cid, Params: p}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	s, err := amp.NewSender(amp.SenderConfig{Identity: identity(t, 31), Rand: rand.Reader, Now: time.Now})
	if err != nil {
		t.Fatal(err)
	}
	m, b, err := s.Seal(context.Background(), amp.Draft{Type: amp.TypeCapInvoke, To: amp.To(identity(t, 30).DID), Body: body, TTL: ttl})
	if err != nil {
		t.Fatal(err)
	}
	return m, b
}

// open verifies a reply as the caller would and returns it.
func open(t testing.TB, reply []byte) *amp.Message {
	t.Helper()
	r, err := amp.NewReceiver(amp.ReceiverConfig{Now: time.Now, AgreementKeys: []*amp.AgreementKey{identity(t, 31).Agreement}})
	if err != nil {
		t.Fatal(err)
	}
	m, err := r.Receive(context.Background(), reply)
	if err != nil {
		t.Fatalf("reply does not verify: %v", err)
	}
	return m
}

// resultError is the error of a CAP_RESULT reply (nil: success) or of an
// ERROR reply.
func resultError(t testing.TB, m *amp.Message) *capability.ResultError {
	t.Helper()
	switch m.Type {
	case amp.TypeCapResult:
		r, err := capability.DecodeResult(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		return r.Error
	case amp.TypeError:
		b, err := amp.DecodeError(m.Body)
		if err != nil {
			t.Fatal(err)
		}
		return &capability.ResultError{Code: b.Code, Message: b.Message}
	}
	t.Fatalf("reply is %s", m.Type)
	return nil
}
