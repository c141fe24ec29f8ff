package client_test

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
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// newIdentity is a fresh did:key identity.
func newIdentity() amp.Identity {
	_, k, _ := ed25519.GenerateKey(rand.Reader)
	x, _ := amp.AgreementKeyFromEd25519(k)
	return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k, Agreement: x}
}

// A caller reaching an agent over the HTTP binding: the caller's program
// needs only client and amphttp. The agent (an empty registry here) stands
// for any agent on the network.
func Example_http() {
	dir, _ := os.MkdirTemp("", "client-example-http-")
	defer os.RemoveAll(dir)
	provider, caller := newIdentity(), newIdentity()

	// The provider's side.
	store, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Now: time.Now, Create: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer store.Close()
	a, err := agent.New(agent.Config{Core: agent.Core{Identity: provider, Store: store, Now: time.Now, Rand: rand.Reader,
		Policy: agent.Rules{{Caller: caller.DID, Prefix: "org.example"}}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := amphttp.NewServer(amphttp.NewHandler(a, amphttp.Options{}), time.Minute, nil)
	go srv.Serve(ln)
	defer srv.Close()

	// The caller's side.
	tr, err := amphttp.NewTransport("http://"+ln.Addr().String(), 0)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer tr.Close()
	c, err := client.New(client.Config{Identity: caller, Peer: provider.DID, Transport: tr,
		Now: time.Now, Rand: rand.Reader, Encrypt: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.Ping(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("pong")
	// An ERROR reply is a verified, signed answer: its code is the
	// provider's (RFC 001 §15).
	_, _, err = c.Query(context.Background(), capability.Query{Filter: capability.Filter{Capability: "org.example.greet"}})
	fmt.Println(uint16(amp.CodeOf(err)), amp.NameOf(err))
	// Output:
	// pong
	// 4002 capability_not_found
}
