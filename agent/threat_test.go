package agent

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// TestTamperedOutputSchemaRunsNothing: the stored output schema's bytes are
// altered on disk; an invocation of a capability using it is refused with
// 5002 and its handler runs zero times (threat: a handler with side effects
// running, then its result failing on a schema that was never verified).
func TestTamperedOutputSchemaRunsNothing(t *testing.T) {
	e := newEnv(t)
	e.agent.Close()
	e.store.Close()
	raw, err := os.ReadFile(e.path)
	if err != nil {
		t.Fatal(err)
	}
	// The output schema is stored once (content-addressed); change one of
	// its bytes, keeping it valid JSON of the same length.
	needle := []byte(`"required":["issues","version"]`)
	if bytes.Count(raw, needle) == 0 {
		t.Fatal("the output schema is not in the store file as expected")
	}
	raw = bytes.ReplaceAll(raw, needle, []byte(`"required":["issuez","version"]`))
	if err := os.WriteFile(e.path, raw, 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := resolver.Open(e.path, resolver.Options{Now: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var runs atomic.Int64
	cfg := e.cfg
	cfg.Store = s
	cfg.Ledger = memoryLedger(t, e.clock.Now, ledger.Limits{})
	cfg.Handlers = map[string]Handler{"org.agentries.code-review:2.1.0": func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		return map[string]any{"issues": []any{}, "version": "x"}, nil
	}}
	a, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	e.agent = a
	_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	if eb := errorOf(t, reply); eb.Code != amp.CodeUnavailable {
		t.Fatalf("got %d, want 5002", eb.Code)
	}
	if runs.Load() != 0 {
		t.Fatalf("the handler ran %d times with a tampered output schema", runs.Load())
	}
	if u := a.Ledger().Usage(); u.Entries != 0 {
		t.Fatalf("%d durable ledger entries for a refusal", u.Entries)
	}
}

// TestLedgerFloodFromFreshDIDKeys: PINGs, queries and refused invocations
// from hundreds of fresh did:key identities (free to make) write nothing
// durable, and the ledger file does not grow (threat: filling the agent's
// disk with replay entries kept for days).
func TestLedgerFloodFromFreshDIDKeys(t *testing.T) {
	e := newEnv(t)
	before, err := os.Stat(e.path + ".ledger.wal")
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 300; i++ {
		_, k, _ := ed25519.GenerateKey(rand.Reader)
		id := amp.Identity{DID: amp.DIDKey(k.Public().(ed25519.PublicKey)), SigningKey: k}
		typ, body := amp.TypePing, []byte(nil)
		switch i % 3 {
		case 1:
			typ, body = amp.TypeCapQuery, mustMarshal(t, map[string]any{})
		case 2: // an invocation the policy refuses (the caller is unknown)
			typ, body = amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams)
		}
		_, raw := e.seal(id, typ, body)
		if _, err := e.agent.Handle(context.Background(), raw); err != nil {
			t.Fatal(err)
		}
	}
	if u := e.agent.Ledger().Usage(); u.Entries != 0 || u.Bytes != 0 {
		t.Fatalf("ledger holds %+v after a flood from unknown callers", u)
	}
	after, err := os.Stat(e.path + ".ledger.wal")
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() {
		t.Fatalf("ledger file grew from %d to %d bytes", before.Size(), after.Size())
	}
}

// TestLedgerBudgetRefusesRetryably: an allowed caller's invocations beyond
// the ledger's budget are refused with a retryable code before the
// handler runs, and the accounted bytes never pass the budget.
func TestLedgerBudgetRefusesRetryably(t *testing.T) {
	e := newEnv(t, withConfig(func(c *Config) {
		c.Ledger = memoryLedger(t, func() time.Time { return t0 }, ledger.Limits{Budget: 16 << 10, PerCaller: 16 << 10})
	}))
	refused := 0
	for i := 0; i < 40; i++ {
		n := e.count("org.agentries.code-review:2.1.0").Load()
		_, reply := e.exchange(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
		if reply.Type == amp.TypeError {
			eb := errorOf(t, reply)
			if eb.Retry == nil || !*eb.Retry || (eb.Code != amp.CodeOverloaded && eb.Code != amp.CodeRateLimited) {
				t.Fatalf("refusal %d retry %v, want a retryable 5004 or 3005", eb.Code, eb.Retry)
			}
			if e.count("org.agentries.code-review:2.1.0").Load() != n {
				t.Fatal("the handler ran for a refused invocation")
			}
			refused++
		}
		if u := e.agent.Ledger().Usage(); u.Bytes > u.Budget {
			t.Fatalf("ledger at %d bytes, budget %d", u.Bytes, u.Budget)
		}
	}
	if refused == 0 {
		t.Fatal("40 invocations fit a 16 KiB ledger: the budget is not enforced")
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := amp.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestClientDisconnectThenRetry: the caller goes away while the handler
// runs; the handler finishes, its result is recorded, and the caller's
// retry of the same message gets that result, with the handler run once
// (threat: a disconnect turning into a final "canceled" that the retry
// then gets forever, or a second run).
func TestClientDisconnectThenRetry(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	var runs atomic.Int64
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		close(started)
		<-release
		return map[string]any{"issues": []any{}, "version": "the real result"}, nil
	}))
	srv := httptest.NewServer(amphttp.NewHandler(e.agent, amphttp.Options{}))
	defer srv.Close()
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+amphttp.MessagesPath, bytes.NewReader(msg))
		req.Header.Set("Content-Type", amphttp.ContentType)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	<-started
	cancel() // the caller disconnects while the handler runs
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("the first request was not cut off: %v", err)
	}
	// The retry arrives while the first copy still runs, then the handler
	// finishes.
	retry := make(chan []byte, 1)
	go func() {
		resp, err := http.Post(srv.URL+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(msg))
		if err != nil {
			retry <- nil
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		retry <- b
	}()
	time.Sleep(20 * time.Millisecond)
	close(release)
	got := <-retry
	res := resultOf(t, e.receive(e.caller, got))
	if res.Status != capability.StatusSuccess || resultVersion(t, res) != "the real result" {
		t.Fatalf("the retry got %+v, want the handler's real result", res)
	}
	// And a later retry gets the same bytes.
	again, err := e.agent.Handle(context.Background(), msg)
	if err != nil || !bytes.Equal(again, got) {
		t.Fatal("a later retry got different bytes")
	}
	if runs.Load() != 1 {
		t.Fatalf("the handler ran %d times", runs.Load())
	}
}

// bombParams is a map of n arrays of 65,536 zeros: each array within the
// per-array cap; at n = 250, 16 MiB and 16 million items (the shape that
// took the agent to gigabytes). The test uses n = 64 (4 MiB, 4 million
// items, 16 times the item budget) to stay quick on a shared machine.
func bombParams(t testing.TB, n int) []byte {
	t.Helper()
	arr := append([]byte{0x9a, 0x00, 0x01, 0x00, 0x00}, make([]byte, 65536)...) // array(65536) of 0
	out := []byte{0xb8, byte(n)}                                                // map(n)
	for i := 0; i < n; i++ {
		k := []byte{0x63, 'k', byte('a' + i/26%26), byte('a' + i%26)}
		out = append(out, k...)
		out = append(out, arr...)
	}
	return out
}

// TestMemoryBombIsBounded: a 4 MiB message of 4 million items (four times
// the message item budget), and a signed invocation whose params expand to
// 786,432 items (three times the params item budget), unauthenticated (no from/id) and signed by an allowed
// caller, sent by several clients at once, is refused, and the agent
// allocates a bounded multiple of the bytes it admitted; requests beyond
// the in-flight byte cap get 503 with Retry-After without being read
// (threat: a few requests taking the agent to gigabytes of memory).
func TestMemoryBombIsBounded(t *testing.T) {
	e := newEnv(t)
	// Unauthenticated: the raw map, no envelope fields at all.
	unauth := bombParams(t, 64)
	// Authenticated: a CAP_INVOKE of the allowed caller carrying 12 arrays
	// (within the message's item budget, over the params' one).
	params := bombParams(t, 12)
	body, err := capability.Invoke{ID: capability.ID{Name: "org.agentries.code-review", Version: mustVersion(t, "2.1.0")}, Params: params}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	_, auth := e.seal(e.caller, amp.TypeCapInvoke, body)
	const clients = 4
	const inFlight = 6 << 20 // one 4 MiB body at a time
	for _, tc := range []struct {
		name   string
		msg    []byte
		status int
		bound  uint64 // bytes allocated per admitted request
	}{
		// A few copies of the body at most; expanded, 4 million items
		// would be >= 64 MiB.
		{"unauthenticated", unauth, http.StatusBadRequest, 16 << 20},
		// Expanded, 786,432 items would be >= 12 MiB.
		{"authenticated", auth, http.StatusOK, 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(amphttp.NewHandler(e.agent, amphttp.Options{MaxBody: 5 << 20, MaxInFlightBytes: inFlight}))
			defer srv.Close()
			runtime.GC()
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			var wg sync.WaitGroup
			var admitted, busy atomic.Int64
			start := make(chan struct{})
			for i := 0; i < clients; i++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					<-start
					resp, err := http.Post(srv.URL+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(tc.msg))
					if err != nil {
						t.Error(err)
						return
					}
					b, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					switch resp.StatusCode {
					case http.StatusServiceUnavailable:
						if resp.Header.Get("Retry-After") == "" {
							t.Error("503 without Retry-After")
						}
						busy.Add(1)
					case tc.status:
						admitted.Add(1)
						if tc.status == http.StatusOK {
							if eb := errorOf(t, e.receive(e.caller, b)); eb.Code != amp.CodeInvalidMessage {
								t.Errorf("the bomb got %d, want 1001 limit_exceeded", eb.Code)
							}
						}
					default:
						t.Errorf("status %d", resp.StatusCode)
					}
				}()
			}
			close(start)
			wg.Wait()
			runtime.ReadMemStats(&after)
			if admitted.Load() == 0 {
				t.Fatal("no request was processed")
			}
			// The client side of this test allocates too (reading replies is
			// small; the request bodies are shared, not copied), so the bound
			// is per admitted request.
			perRequest := (after.TotalAlloc - before.TotalAlloc) / uint64(admitted.Load())
			if perRequest > tc.bound {
				t.Fatalf("%d MiB allocated per admitted request (%d admitted, %d busy)", perRequest>>20, admitted.Load(), busy.Load())
			}
			t.Logf("%d admitted, %d refused busy, %d KiB allocated per admitted request", admitted.Load(), busy.Load(), perRequest>>10)
		})
	}
}

// TestInFlightCapAnswers503: beyond MaxInFlight requests, or beyond
// MaxInFlightBytes, a request is answered at once with 503, Retry-After and
// a transport error body, never queued (threat: an unbounded queue of
// requests and their bodies in memory).
func TestInFlightCapAnswers503(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	e := newEnv(t, withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
		close(started)
		<-release
		return map[string]any{"issues": []any{}, "version": "x"}, nil
	}))
	srv := httptest.NewServer(amphttp.NewHandler(e.agent, amphttp.Options{MaxInFlight: 1, MaxBody: 1 << 20, MaxInFlightBytes: 1 << 20}))
	defer srv.Close()
	_, slow := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, "org.agentries.code-review:2.1.0", goodParams))
	first := make(chan int, 1)
	go func() {
		resp, err := http.Post(srv.URL+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(slow))
		if err != nil {
			first <- 0
			return
		}
		resp.Body.Close()
		first <- resp.StatusCode
	}()
	<-started
	_, ping := e.seal(e.caller, amp.TypePing, nil)
	resp, err := http.Post(srv.URL+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(ping))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	eb, derr := amp.DecodeError(b)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" || derr != nil || eb.Code != amp.CodeOverloaded {
		t.Fatalf("second request: %d, Retry-After %q, body %v", resp.StatusCode, resp.Header.Get("Retry-After"), derr)
	}
	close(release)
	if s := <-first; s != http.StatusOK {
		t.Fatalf("first request: %d", s)
	}
	// Bytes: a body's declared length is charged to its own peer's share
	// at once, and to the server's bytes only as it arrives. A body
	// declared as 768 KiB that trickles in holds its peer's share: a
	// second body from the same address finds no room (503). It does not
	// hold the server's bytes: another address is still answered.
	srv2 := httptest.NewServer(amphttp.NewHandler(e.agent, amphttp.Options{MaxInFlight: 4, MaxBody: 768 << 10, MaxInFlightBytes: 1 << 20, MaxPeerInFlightBytes: 1 << 20}))
	defer srv2.Close()
	hold, err := net.Dial("tcp", srv2.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	fmt.Fprintf(hold, "POST %s HTTP/1.1\r\nHost: agent\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\nx", amphttp.MessagesPath, amphttp.ContentType, 768<<10)
	time.Sleep(100 * time.Millisecond)
	resp, err = http.Post(srv2.URL+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(make([]byte, 300<<10)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a body from the same address while its share is taken: %d, want 503", resp.StatusCode)
	}
	other := &http.Client{Transport: &http.Transport{DialContext: (&net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}}).DialContext}}
	resp, err = other.Post(srv2.URL+amphttp.MessagesPath, amphttp.ContentType, bytes.NewReader(ping))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a body from another address while one peer trickles: %d, want 200", resp.StatusCode)
	}
}
