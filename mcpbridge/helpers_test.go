package mcpbridge

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
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

// testPrincipal is the DID the tests' allow rules name for the MCP caller.
const testPrincipal = "did:web:mcp-user.example.org"

// testCap is the capability the tests call: the translate sample's 1.0.0,
// whose input schema $refs two other artifacts of its bundle.
const testCap = "org.example.translate.text:1.0.0"

func sample(t testing.TB, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", rel))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// newStoreFile makes a store file that trusts the example publisher and
// holds the translate sample, closed; it returns its path.
func newStoreFile(t testing.TB) string {
	t.Helper()
	db := filepath.Join(t.TempDir(), "store.db")
	s, err := resolver.Open(db, resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	pub, err := keyfile.ParsePublicPEM(sample(t, "keys/TEST-ONLY-example-publisher.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub, []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(sample(t, "translate.ampb")), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	return db
}

// tamperFile flips a bit in every copy of want in the file at p.
func tamperFile(t testing.TB, p string, want []byte) {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for i := 0; ; {
		j := bytes.Index(raw[i:], want)
		if j < 0 {
			break
		}
		raw[i+j+len(want)/2] ^= 0x01
		i += j + len(want)
		n++
	}
	if n == 0 {
		t.Fatal("the bytes are not in the store file")
	}
	if err := os.WriteFile(p, raw, 0o600); err != nil {
		t.Fatal(err)
	}
}

// env is a store, an agent serving the translate sample's versions with
// a counting handler, and a bridge.
type env struct {
	store  *resolver.Store
	agent  *agent.Agent
	bridge *Bridge
	runs   *atomic.Int64
}

func newEnv(t testing.TB, db string, rules agent.Rules, led ...*ledger.Ledger) *env {
	t.Helper()
	store, err := resolver.Open(db, resolver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return newEnvOn(t, store, time.Now, rules, led...)
}

// newEnvOn is newEnv on an open store, with the agent's clock.
func newEnvOn(t testing.TB, store *resolver.Store, now func() time.Time, rules agent.Rules, led ...*ledger.Ledger) *env {
	t.Helper()
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	id := amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
	runs := &atomic.Int64{}
	h := func(ctx context.Context, params any) (any, error) {
		runs.Add(1)
		p := params.(map[string]any)
		if p["text"] == "invalid result" {
			return map[string]any{"text": 7}, nil
		}
		return map[string]any{"text": "[" + p["lang"].(string) + "] " + p["text"].(string)}, nil
	}
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: id, Store: store, Policy: rules, Now: now, Rand: rand.Reader,
		Handlers: map[string]agent.Handler{testCap: h}, InlineHandlers: true, Ledger: firstOr(led)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	b, err := New(Options{Agent: func() Agent { return a }, Store: store, Refresh: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return &env{store: store, agent: a, bridge: b, runs: runs}
}

func firstOr(l []*ledger.Ledger) *ledger.Ledger {
	if len(l) == 0 {
		return nil
	}
	return l[0]
}
