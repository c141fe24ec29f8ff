package amphttp_test

import (
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// An agent served on the HTTP binding. Bytes that do not verify get no
// signed answer: the client side reports the agent's unsigned refusal.
func Example() {
	dir, _ := os.MkdirTemp("", "amphttp-example-")
	defer os.RemoveAll(dir)
	store, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Now: time.Now, Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	id := amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: id, Store: store, Now: time.Now, Rand: rand.Reader, Policy: agent.Rules{}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := httptest.NewServer(amphttp.NewHandler(a, amphttp.Options{MaxBody: 1 << 20}))
	defer srv.Close()

	tr, err := amphttp.NewTransport(srv.URL, 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	_, err = tr.RoundTrip(context.Background(), []byte{0xa1, 0x01, 0x02}) // {1: 2}: not an AMP message
	fmt.Println(uint16(amp.CodeOf(err)))
	// Output: 1001
}
