package agent_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

// An agent serving the translate sample bundle, and a client invoking it
// with version negotiation, in one process.
func Example() {
	dir, _ := os.MkdirTemp("", "agent-example")
	defer os.RemoveAll(dir)
	now := func() time.Time { return time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC) }

	// The registry: trust the (test-only) publisher, import its bundle.
	store, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Now: now, Create: true})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	pub, _ := keyfile.ParsePublic("../testdata/bundles/keys/TEST-ONLY-example-publisher.pub.pem")
	store.TrustAdd("example", pub, []string{"org.example"})
	data, _ := os.ReadFile("../testdata/bundles/translate.ampb")
	if _, err := store.Import(context.Background(), bytes.NewReader(data), resolver.ImportOptions{}); err != nil {
		panic(err)
	}

	newIdentity := func() amp.Identity {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		x, _ := amp.AgreementKeyFromEd25519(k)
		return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k, Agreement: x}
	}
	provider, caller := newIdentity(), newIdentity()

	a, err := agent.New(agent.Config{
		Identity: provider, Store: store, Now: now, Rand: rand.Reader,
		Policy: agent.Rules{{Caller: caller.DID, Prefix: "org.example"}},
		Handlers: map[string]agent.Handler{
			"org.example.translate.text:2.1.0": func(ctx context.Context, params any) (any, error) {
				p := params.(map[string]any)
				return map[string]any{"text": "[" + p["target"].(string) + "] " + p["text"].(string), "detected_source": "en"}, nil
			},
		},
	})
	if err != nil {
		panic(err)
	}

	c, err := agent.NewClient(agent.ClientConfig{Identity: caller, Peer: provider.DID, Transport: agent.Loopback(a),
		Now: now, Rand: rand.Reader, Encrypt: true})
	if err != nil {
		panic(err)
	}
	prefer, _ := capability.ParseVersion("2.2.0")
	accept, _ := capability.ParseVersion("2.1.0")
	params, _ := amp.Marshal(map[string]any{"text": "hello", "target": "de"})
	res, ex, err := c.Invoke(context.Background(), capability.Invoke{
		Capability: "org.example.translate.text",
		Negotiate:  &capability.NegotiateHints{Preferred: prefer, Acceptable: []capability.Version{accept}},
		Params:     params,
	})
	if err != nil {
		panic(err)
	}
	out, _ := amp.JSONValue(res.Result)
	fmt.Println(res.Status, string(out), ex.Reply.Encrypted())
	// Output:
	// success {"text":"[de] hello","detected_source":"en"} true
}
