package ampstcp_test

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/ampstcp"
)

func newIdentity(t testing.TB) amp.Identity {
	_, k, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x, err := amp.AgreementKeyFromEd25519(k)
	if err != nil {
		t.Fatal(err)
	}
	return amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k, Agreement: x}
}

// provider is an agent serving the translate sample bundle; opts adjust
// its configuration.
func provider(t testing.TB, caller amp.Identity, opts ...func(*agent.Config)) (*agent.Agent, amp.Identity) {
	t.Helper()
	store, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Now: time.Now, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	pub, err := keyfile.ParsePublic("../../testdata/bundles/keys/TEST-ONLY-example-publisher.pub.pem")
	if err != nil {
		t.Fatal(err)
	}
	if err := store.TrustAdd("example", pub, []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile("../../testdata/bundles/translate.ampb")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Import(context.Background(), bytes.NewReader(data), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	id := newIdentity(t)
	cfg := agent.Config{Core: agent.Core{Identity: id, Store: store, Now: time.Now, Rand: rand.Reader,
		Policy: agent.Rules{{Caller: caller.DID, Prefix: "org.example"}},
		Handlers: map[string]agent.Handler{"org.example.translate.text:2.1.0": func(ctx context.Context, params any) (any, error) {
			p := params.(map[string]any)
			return map[string]any{"text": p["text"], "detected_source": "en"}, nil
		}}}}
	for _, o := range opts {
		o(&cfg)
	}
	a, err := agent.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return a, id
}

// countingListener counts accepted connections.
type countingListener struct {
	net.Listener
	n atomic.Int64
}

func (l *countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.n.Add(1)
	}
	return c, err
}

func TestTwoAgentsPipelineTenThousandInvocationsOnOneConnection(t *testing.T) {
	n := 10000
	if testing.Short() {
		n = 500
	}
	for _, secure := range []bool{false, true} {
		name := "plain"
		if secure {
			name = "tls"
		}
		t.Run(name, func(t *testing.T) {
			caller := newIdentity(t)
			a, prov := provider(t, caller)
			raw, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			cl := &countingListener{Listener: raw}
			var ln net.Listener = cl
			url := "amp://" + raw.Addr().String()
			opts := ampstcp.ClientOptions{}
			if secure {
				cert, pool := ampstcp.SelfSigned(t)
				ln = tls.NewListener(cl, &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
				url = "amps://" + raw.Addr().String()
				opts.TLS = &tls.Config{RootCAs: pool}
			}
			srv := ampstcp.NewServer(a, ampstcp.ServerOptions{})
			go srv.Serve(ln)
			defer srv.Close()
			tr, err := ampstcp.NewTransport(url, opts)
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			c, err := client.New(client.Config{Identity: caller, Peer: prov.DID, Transport: tr, Now: time.Now, Rand: rand.Reader})
			if err != nil {
				t.Fatal(err)
			}
			params, _ := amp.Marshal(map[string]any{"text": "hello", "target": "de"})
			capID, err := capability.ParseID("org.example.translate.text:2.1.0")
			if err != nil {
				t.Fatal(err)
			}
			var wg sync.WaitGroup
			var next, bad atomic.Int64
			var firstErr atomic.Value
			for w := 0; w < 64; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for next.Add(1) <= int64(n) {
						res, ex, err := c.Invoke(context.Background(), capability.Invoke{ID: capID, Params: params})
						if err != nil || res.Status != "success" || !bytes.Equal(ex.Reply.ReplyTo, ex.Request.ID[:]) || ex.Attempts != 1 {
							bad.Add(1)
							firstErr.CompareAndSwap(nil, err)
						}
					}
				}()
			}
			wg.Wait()
			if bad.Load() > 0 {
				t.Fatalf("%d of %d invocations failed or were mismatched; first error %v", bad.Load(), n, firstErr.Load())
			}
			if cl.n.Load() != 1 {
				t.Fatalf("%d connections for %d invocations, want 1", cl.n.Load(), n)
			}
		})
	}
}
