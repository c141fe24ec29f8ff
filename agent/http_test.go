package agent

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/client"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// serveHTTP starts the agent of e on a loopback port and returns its URL.
func serveHTTP(t *testing.T, e *env, opts amphttp.Options) (string, *http.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := amphttp.NewServer(amphttp.NewHandler(e.agent, opts), 10*time.Second, nil)
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return "http://" + ln.Addr().String(), srv
}

func httpClient(t *testing.T, e *env, url string, id amp.Identity, encrypt bool) *client.Client {
	t.Helper()
	tr, err := amphttp.NewTransport(url, 8)
	if err != nil {
		t.Fatal(err)
	}
	c, err := client.New(client.Config{Identity: id, Peer: e.provider.DID, Transport: tr, Now: e.clock.Now, Rand: rand.Reader,
		Encrypt: encrypt, Retry: client.Retry{Sleep: func(context.Context, time.Duration) error { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHTTPTwoAgents: agent A's handler invokes agent B over HTTP; a caller
// invokes A over HTTP; plain and encrypted.
func TestHTTPTwoAgents(t *testing.T) {
	b := newEnv(t)
	urlB, _ := serveHTTP(t, b, amphttp.Options{})
	for _, encrypt := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "encrypted"}[encrypt], func(t *testing.T) {
			var a *env
			a = newEnv(t, withHandler("org.agentries.translate:1.0.0", func(ctx context.Context, p any) (any, error) {
				// A calls B with its own identity; B's policy must allow A.
				tr, _ := amphttp.NewTransport(urlB, 2)
				c, err := client.New(client.Config{Identity: a.provider, Peer: b.provider.DID, Transport: tr, Now: a.clock.Now, Rand: rand.Reader, Encrypt: encrypt})
				if err != nil {
					return nil, err
				}
				id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
				params, _ := amp.Marshal(goodParams)
				r, _, err := c.Invoke(ctx, capability.Invoke{ID: id, Params: params})
				if err != nil {
					return nil, err
				}
				var out map[string]any
				amp.Unmarshal(r.Result, &out)
				return map[string]any{"via": "A", "b_version": out["version"]}, nil
			}))
			// B trusts A as a caller.
			b.agent.cfg.Policy = append(b.agent.cfg.Policy.(Rules), Rule{Caller: a.provider.DID, Prefix: "org.agentries"})
			urlA, _ := serveHTTP(t, a, amphttp.Options{})
			c := httpClient(t, a, urlA, a.caller, encrypt)
			id, _ := capability.ParseID("org.agentries.translate:1.0.0")
			params, _ := amp.Marshal(map[string]any{"x": 1})
			r, ex, err := c.Invoke(context.Background(), capability.Invoke{ID: id, Params: params})
			if err != nil {
				t.Fatal(err)
			}
			var out map[string]any
			amp.Unmarshal(r.Result, &out)
			if out["b_version"] != "org.agentries.code-review:2.1.0" || ex.Reply.Encrypted() != encrypt {
				t.Fatalf("result %v, encrypted reply %v", out, ex.Reply.Encrypted())
			}
		})
	}
}

func TestHTTPPagingAndReplay(t *testing.T) {
	e := newEnv(t)
	url, _ := serveHTTP(t, e, amphttp.Options{})
	c := httpClient(t, e, url, e.caller, false)
	limit := uint64(2)
	q := capability.Query{Filter: capability.Filter{Capability: "org.agentries.paging"}, Limit: &limit}
	pages := 0
	seen := map[string]bool{}
	for {
		d, _, err := c.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		for _, desc := range d.Capabilities {
			if seen[desc.ID().String()] {
				t.Fatalf("duplicate %s across pages", desc.ID())
			}
			seen[desc.ID().String()] = true
		}
		if d.NextCursor == "" {
			break
		}
		q.Cursor = d.NextCursor
	}
	if pages != 3 || len(seen) != 5 {
		t.Fatalf("%d pages, %d descriptors", pages, len(seen))
	}
	// Replay over HTTP: the same bytes twice, the same reply twice.
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	var replies [][]byte
	for i := 0; i < 2; i++ {
		resp, err := http.Post(url+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(msg))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != amphttp.ContentType {
			t.Fatalf("status %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
		}
		replies = append(replies, body)
	}
	if !bytes.Equal(replies[0], replies[1]) || e.count("org.agentries.code-review:2.1.0").Load() != 1 {
		t.Fatal("a replay over http was not answered byte-identically, or ran the handler twice")
	}
}

// TestHTTPShutdownFinishesInFlight: a graceful shutdown lets an in-flight
// invocation finish and answer.
func TestHTTPShutdownFinishesInFlight(t *testing.T) {
	started := make(chan struct{})
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		return map[string]any{"issues": []any{}, "version": "finished"}, nil
	}))
	url, srv := serveHTTP(t, e, amphttp.Options{})
	c := httpClient(t, e, url, e.caller, false)
	done := make(chan error, 1)
	go func() {
		id, _ := capability.ParseID("org.agentries.code-review:2.1.0")
		p, _ := amp.Marshal(goodParams)
		r, _, err := c.Invoke(context.Background(), capability.Invoke{ID: id, Params: p})
		if err == nil && r.Status != capability.StatusSuccess {
			err = errors.New("not a success")
		}
		done <- err
	}()
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("the in-flight invocation did not complete: %v", err)
	}
	// After shutdown, nothing is served.
	if _, err := http.Get(url + amphttp.HealthPath); err == nil {
		t.Fatal("the server still answers after shutdown")
	}
}
