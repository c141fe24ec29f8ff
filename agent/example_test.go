package agent_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// These examples import only the module's public packages, so they can be
// copied into another module as they are. They build their own small
// bundle (one capability, org.example.greet.hello 1.0.0) with a publisher
// key made on the spot, where a real deployment imports a bundle file that
// crossed the air gap (ampbundle import).

// exampleSource is a bundle source folder: bundle.json and one capability
// with its input and output schemas (docs/FORMAT.md §8).
func exampleSource() map[string]string {
	return map[string]string{
		"bundle.json": `{"bundle_id": "org.example.greet", "version": 1}`,
		"capabilities/org.example.greet.hello/1.0.0/capability.json": `{}`,
		"capabilities/org.example.greet.hello/1.0.0/input.schema.json": `{
		"type": "object", "required": ["name"], "additionalProperties": false,
		"properties": {"name": {"type": "string", "maxLength": 64}}}`,
		"capabilities/org.example.greet.hello/1.0.0/output.schema.json": `{
		"type": "object", "required": ["greeting"],
		"properties": {"greeting": {"type": "string"}}}`,
	}
}

// exampleRegistry creates a store in dir, builds the example bundle,
// trusts its publisher for org.example and imports it.
func exampleRegistry(dir string, now func() time.Time) (*resolver.Store, error) {
	src := filepath.Join(dir, "source")
	for name, body := range exampleSource() {
		p := filepath.Join(src, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			return nil, err
		}
	}
	pub, publisher, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		return nil, err
	}
	draft, err := bundlebuild.LoadSource(src, bundlebuild.SourceOptions{CreatedAt: now(), Signer: pub})
	if err != nil {
		return nil, err
	}
	file := filepath.Join(dir, "greet.ampb")
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if _, err := bundle.Write(f, draft, []ed25519.PrivateKey{publisher}, bundle.WriteOptions{}); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Close(); err != nil {
		return nil, err
	}

	store, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Now: now, Create: true})
	if err != nil {
		return nil, err
	}
	if err := store.TrustAdd("example-publisher", pub, []string{"org.example"}); err != nil {
		store.Close()
		return nil, err
	}
	in, err := os.Open(file)
	if err != nil {
		store.Close()
		return nil, err
	}
	defer in.Close()
	if _, err := store.Import(context.Background(), in, resolver.ImportOptions{}); err != nil {
		store.Close()
		return nil, err
	}
	return store, nil
}

// exampleIdentity is a fresh did:key identity.
func exampleIdentity() amp.Identity {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	x, _ := amp.AgreementKeyFromEd25519(k)
	return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k, Agreement: x}
}

// Hello and Greeting are the params and result of org.example.greet.hello
// 1.0.0: their json tags name the fields of the bundle's schemas.
type Hello struct {
	Name string `json:"name"`
}

// Greeting is the result of org.example.greet.hello 1.0.0.
type Greeting struct {
	Greeting string `json:"greeting"`
}

// hello is the handler of org.example.greet.hello 1.0.0: params and result
// arrive and leave already validated against the bundle's schemas.
func hello(ctx context.Context, in Hello) (Greeting, error) {
	return Greeting{Greeting: "hello, " + in.Name}, nil
}

// An agent serving a bundle from its local registry, and a client invoking
// it, in one process: the client's signed (and here encrypted) message goes
// straight to the agent's Handle. The handler and the call are typed:
// agent.Func and client.Call carry Go structs through the JSON data model.
// The agent keeps its idempotency ledger beside the store (agent.Config's
// Ledger says where).
func Example() {
	dir, _ := os.MkdirTemp("", "agent-example-")
	defer os.RemoveAll(dir)
	store, err := exampleRegistry(dir, time.Now) // in production: resolver.Open of a store 'ampbundle import' filled
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	provider, caller := exampleIdentity(), exampleIdentity()
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: provider, Store: store, Now: time.Now, Rand: rand.Reader,
		Policy:   agent.Rules{{Caller: caller.DID, Prefix: "org.example"}},
		Handlers: map[string]agent.Handler{"org.example.greet.hello:1.0.0": agent.Func(hello)}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	c, _ := client.New(client.Config{Identity: caller, Peer: provider.DID, Transport: client.Loopback(a), Now: time.Now, Rand: rand.Reader, Encrypt: true})

	out, err := client.Call[Greeting](context.Background(), c, "org.example.greet.hello:1.0.0", Hello{Name: "world"})
	fmt.Println(out.Greeting, err)
	// Params that break the input schema never reach the handler.
	_, err = client.Call[Greeting](context.Background(), c, "org.example.greet.hello:1.0.0", map[string]any{"name": 42})
	fmt.Println(amp.NameOf(err))
	// Output:
	// hello, world <nil>
	// schema_violation
}

// The same agent over the HTTP binding (POST /amp/v1/messages) on a
// loopback port, and a client that reaches it over HTTP.
func Example_http() {
	dir, _ := os.MkdirTemp("", "agent-example-http-")
	defer os.RemoveAll(dir)
	now := time.Now

	store, err := exampleRegistry(dir, now)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()

	provider, caller := exampleIdentity(), exampleIdentity()
	a, err := agent.New(agent.Config{Core: agent.Core{
		Identity: provider, Store: store, Now: now, Rand: rand.Reader,
		Policy:   agent.Rules{{Caller: caller.DID, Prefix: "org.example"}},
		Handlers: map[string]agent.Handler{"org.example.greet.hello:1.0.0": agent.Func(hello)},
	}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := amphttp.NewServer(amphttp.NewHandler(a, amphttp.Options{}), time.Minute, nil)
	go srv.Serve(ln)
	defer srv.Close()

	transport, err := amphttp.NewTransport("http://"+ln.Addr().String(), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	c, err := client.New(client.Config{Identity: caller, Peer: provider.DID,
		Transport: transport, Now: now, Rand: rand.Reader})
	if err != nil {
		fmt.Println(err)
		return
	}
	out, err := client.Call[Greeting](context.Background(), c, "org.example.greet.hello:1.0.0", Hello{Name: "http"})
	fmt.Println(out.Greeting, err)
	// Output:
	// hello, http <nil>
}
