//go:build unix

package admin

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "testdata", "bundles", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// serve runs the admin API of a fresh store on a socket in a temporary
// directory and returns the store, the socket path and a dialled client.
func serve(t *testing.T) (*resolver.Store, string, *Client) {
	t.Helper()
	return serveWrapped(t, func(h http.Handler) http.Handler { return h })
}

// serveWrapped is serve with the agent's handler wrapped by wrap.
func serveWrapped(t *testing.T, wrap func(http.Handler) http.Handler) (*resolver.Store, string, *Client) {
	t.Helper()
	dir := t.TempDir()
	s, err := resolver.Open(filepath.Join(dir, "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	sock := SocketPath(s.Path())
	ln, err := Listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: wrap(NewHandler(s, nil)), ConnContext: ConnContext}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	c, err := Dial(sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return s, sock, c
}

func publisher(t *testing.T) []byte {
	t.Helper()
	pub, err := keyfile.ParsePublicPEM(sample(t, "keys/TEST-ONLY-example-publisher.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// TestRoundTrip drives every operation of the socket against a real store
// and checks each against the store itself.
func TestRoundTrip(t *testing.T) {
	s, _, c := serve(t)
	if err := c.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	keys, err := c.TrustList()
	if err != nil || len(keys) != 1 || keys[0].Name != "example" || !bytes.Equal(keys[0].Key, publisher(t)) {
		t.Fatalf("trust list %+v %v", keys, err)
	}
	file := sample(t, "translate.ampb")
	var progressed int64
	res, err := c.Import(context.Background(), bytes.NewReader(file), resolver.ImportOptions{Progress: func(n int64) { progressed = n }})
	if err != nil || res.BundleID != "org.example.translate" || res.Version != 1 {
		t.Fatalf("import %+v %v", res, err)
	}
	if progressed != int64(len(file)) {
		t.Fatalf("progress reported %d of %d bytes", progressed, len(file))
	}
	if c.Generation() != s.Generation() || c.Generation() == 0 {
		t.Fatalf("client generation %d, store %d", c.Generation(), s.Generation())
	}
	// The change is in the agent's store, not in a copy.
	if bs, _ := s.Bundles(); len(bs) != 1 || bs[0].BundleID != "org.example.translate" {
		t.Fatalf("store bundles %+v", bs)
	}
	bs, err := c.Bundles()
	if err != nil || len(bs) != 1 || bs[0].Highest != 1 {
		t.Fatalf("bundles %+v %v", bs, err)
	}
	cat, err := c.Catalog()
	want, _ := s.Catalog()
	if err != nil || len(cat.Names) != len(want.Names) || cat.Generation != want.Generation || cat.Aliases["translate"] != want.Aliases["translate"] {
		t.Fatalf("catalog %+v %v", cat, err)
	}
	// Resolve: the same verified bytes as the store gives.
	e := want.ByName[want.Names[0]][0]
	ref := e.Descriptor.InputSchema
	got, err := c.Resolve(ref)
	direct, derr := s.Resolve(ref)
	if err != nil || derr != nil || !bytes.Equal(got, direct) {
		t.Fatalf("resolve: %v %v", err, derr)
	}
	// Tampering: a reference whose hash does not match is 5002, by name.
	bad := ref
	bad.Hash = bytes.Repeat([]byte{0xAA}, len(ref.Hash))
	if _, err := c.Resolve(bad); !errors.Is(err, resolver.ErrHashMismatch) || !errors.Is(err, amp.CodeUnavailable) {
		t.Fatalf("tampered ref: %v", err)
	}
	// Export is byte-identical to the file imported.
	var out bytes.Buffer
	if err := c.Export("org.example.translate", &out); err != nil || !bytes.Equal(out.Bytes(), file) {
		t.Fatalf("export: %v (%d bytes)", err, out.Len())
	}
	if ps, err := c.Check(); err != nil || len(ps) != 0 {
		t.Fatalf("check %+v %v", ps, err)
	}
	entries, err := c.Audit()
	head, herr := c.AuditHead()
	wantHead, _ := s.AuditHead()
	if err != nil || herr != nil || len(entries) != 2 || !bytes.Equal(head, wantHead) {
		t.Fatalf("audit %d entries, %v %v", len(entries), err, herr)
	}
	if err := c.VerifyAudit(); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Remove("org.example.translate"); err != nil || v != 1 {
		t.Fatalf("remove %d %v", v, err)
	}
	// Removed: fail closed.
	if _, err := c.Resolve(ref); !errors.Is(err, resolver.ErrBundleMissing) {
		t.Fatalf("after removal: %v", err)
	}
	if err := c.TrustRemove("example"); err != nil {
		t.Fatal(err)
	}
}

// TestErrorsKeepTheirNames: refusals come back as the named errors the
// store returned, so the CLI prints the same codes as offline.
func TestErrorsKeepTheirNames(t *testing.T) {
	s, _, c := serve(t)
	if _, err := c.Remove("org.example.nope"); !errors.Is(err, resolver.ErrUnknownBundle) {
		t.Fatalf("remove unknown: %v", err)
	}
	if err := c.TrustRemove("nobody"); !errors.Is(err, resolver.ErrUnknownTrust) {
		t.Fatalf("trust remove unknown: %v", err)
	}
	if err := c.Export("org.example.nope", new(bytes.Buffer)); !errors.Is(err, resolver.ErrUnknownBundle) {
		t.Fatalf("export unknown: %v", err)
	}
	// Wrong key: nothing is trusted, the import is refused and nothing is
	// written.
	if _, err := c.Import(context.Background(), bytes.NewReader(sample(t, "translate.ampb")), resolver.ImportOptions{}); !errors.Is(err, bundle.ErrUntrustedKey) {
		t.Fatalf("untrusted import: %v", err)
	}
	// Tampering: one flipped byte in the upload.
	c.TrustAdd("example", publisher(t), []string{"org.example"})
	file := sample(t, "translate.ampb")
	file[len(file)/2] ^= 1
	if _, err := c.Import(context.Background(), bytes.NewReader(file), resolver.ImportOptions{}); err == nil {
		t.Fatal("tampered bundle imported")
	}
	// Truncation.
	if _, err := c.Import(context.Background(), bytes.NewReader(sample(t, "translate.ampb")[:100]), resolver.ImportOptions{}); err == nil {
		t.Fatal("truncated bundle imported")
	}
	if bs, _ := s.Bundles(); len(bs) != 0 {
		t.Fatalf("a refused import left %+v", bs)
	}
	if err := c.TrustAdd("bad", []byte{1, 2, 3}, nil); err == nil {
		t.Fatal("a malformed key was trusted")
	}
}

// TestMalformedRequests: bodies that are not the expected JSON are 400s
// with a code, never a panic.
func TestMalformedRequests(t *testing.T) {
	_, sock, _ := serve(t)
	hc := &http.Client{Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", sock)
	}}}
	for _, tc := range []struct{ method, path, body string }{
		{"POST", "/v1/remove", "{"},
		{"POST", "/v1/remove", `{"bundle_id":"x","extra":1}`},
		{"POST", "/v1/trust/add", `{"name":"x","key":"did:key:zNOPE"}`},
		{"POST", "/v1/resolve", `{"bundle_id":"b","artifact_key":"k","hash_alg":"sha-256","hash":"zz"}`},
		{"POST", "/v1/resolve", `[]`},
		{"POST", "/v1/trust/threshold", `{"scope":"org.example","threshold":"2"}`},
		{"POST", "/v1/trust/threshold", `{"scope":"org.example","threshold":0}`},
		{"POST", "/v1/trust/add", `{"name":"x","key":"did:key:z6Mkon3Necd6NkkyfoGoHxid2znGc59LU3K7mubaRcFbLfLX","scopes":["org.x"],"threshold":99}`},
		{"POST", "/v1/freshness", `{"scope":"*"}`},
		{"POST", "/v1/freshness", `{"scope":"*","max_age_seconds":18446744073709551615}`},
		{"POST", "/v1/freshness/reset", `{"bundle_id":1}`},
		{"POST", "/v1/trust/policy", `{"format":"nope"}`},
	} {
		req, _ := http.NewRequest(tc.method, "http://agent"+tc.path, bytes.NewBufferString(tc.body))
		resp, err := hc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s %s %q: status %d", tc.method, tc.path, tc.body, resp.StatusCode)
		}
	}
	resp, err := hc.Get("http://agent/v1/nothing")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Fatalf("unknown path: %d", resp.StatusCode)
	}
}

// TestListen: the socket is the owner's only; a live socket is never
// taken over; a stale one is replaced; a non-socket is never removed.
func TestListen(t *testing.T) {
	_, sock, _ := serve(t)
	st, err := os.Stat(sock)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("socket mode %v %v", st.Mode(), err)
	}
	if _, err := Listen(sock); err == nil {
		t.Fatal("a second listener took over a live admin socket")
	}

	dir := t.TempDir()
	stale := filepath.Join(dir, "stale.sock")
	ln, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close()
	if _, err := Dial(stale); err == nil {
		t.Fatal("dialled a dead socket")
	}
	ln2, err := Listen(stale)
	if err != nil {
		t.Fatalf("stale socket not replaced: %v", err)
	}
	ln2.Close()

	plain := filepath.Join(dir, "plain")
	os.WriteFile(plain, []byte("keep me"), 0o600)
	if _, err := Listen(plain); err == nil {
		t.Fatal("listened over a regular file")
	}
	if b, _ := os.ReadFile(plain); string(b) != "keep me" {
		t.Fatal("a regular file at the socket path was lost")
	}
}

// TestDialFailsFast: with no agent, Dial fails with the name the CLI
// turns into its "no agent" path (admin_socket), from the dial itself,
// not after a wait: the socket's absence is its answer. The 30 s bound
// is only a hang guard (Dial's own timeout is 500 ms).
func TestDialFailsFast(t *testing.T) {
	start := time.Now()
	_, err := Dial(filepath.Join(t.TempDir(), "none.sock"))
	if err == nil {
		t.Fatal("dialled nothing")
	}
	if got := amp.NameOf(err); got != "admin_socket" {
		t.Fatalf("error name %q, want admin_socket", got)
	}
	if time.Since(start) > 30*time.Second {
		t.Fatal("Dial hung with no agent")
	}
}

// TestPeerCheck: a connection from another user is refused before any
// handler runs (privilege: the socket must not let another local user
// change trust).
func TestPeerCheck(t *testing.T) {
	ran := false
	h := peerCheck(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { ran = true }))
	for _, tc := range []struct {
		uid  any
		want int
		ran  bool
	}{
		{os.Getuid(), http.StatusOK, true},
		{os.Getuid() + 1, http.StatusForbidden, false},
		{-1, http.StatusForbidden, false},
	} {
		ran = false
		req := httptest.NewRequest("GET", "/v1/trust", nil)
		req = req.WithContext(context.WithValue(req.Context(), peerUIDKey{}, tc.uid))
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != tc.want || ran != tc.ran {
			t.Errorf("uid %v: status %d ran %v", tc.uid, rec.Code, ran)
		}
	}
}

// A sync through an agent's socket must audit the mirror URL just as a
// direct import does (the source travels URL-encoded as ?source=); a
// query-like source must not smuggle allow_downgrade.
func TestImportSourceReachesTheAuditThroughTheSocket(t *testing.T) {
	s, _, c := serve(t)
	if err := c.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	src := "http://10.0.0.5:8470/bundles/org.example.translate?x=1&allow_downgrade=1"
	if _, err := c.Import(context.Background(), bytes.NewReader(sample(t, "translate.ampb")), resolver.ImportOptions{Source: src}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Audit()
	if err != nil || len(a) == 0 {
		t.Fatal(err)
	}
	if e := a[len(a)-1]; e.Action != "import" || e.Source != src {
		t.Fatalf("last audit entry %+v, want an import from %s", e, src)
	}
}

// TestFetchGenerationSeesEveryCommitOfTheHolder: a client's Generation
// was only that of its last answer (0 for a fresh client), so a reader
// polling it — the mirror over an agent's store — saw no commit. It asks
// now, and an older agent without the route is asked for its bundle list,
// whose answer carries the generation too.
func TestFetchGenerationSeesEveryCommitOfTheHolder(t *testing.T) {
	s, _, c := serve(t)
	if err := s.TrustAdd("example", publisher(t), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if g, err := c.FetchGeneration(); err != nil || g != s.Generation() || g == 0 || c.Generation() != g {
		t.Fatalf("FetchGeneration %d %v, Generation %d, store at %d", g, err, c.Generation(), s.Generation())
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(sample(t, "translate.ampb")), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if g, err := c.FetchGeneration(); err != nil || g != s.Generation() {
		t.Fatalf("after a commit of the holder: %d %v, store at %d", g, err, s.Generation())
	}

	// An older agent: GET /v1/generation is not found.
	h := NewHandler(s, nil)
	older := filepath.Join(t.TempDir(), "older.sock")
	ln, err := Listen(older)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{ConnContext: ConnContext, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/generation" {
			http.NotFound(w, r)
			return
		}
		h.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	oc, err := Dial(older)
	if err != nil {
		t.Fatal(err)
	}
	defer oc.Close()
	if g, err := oc.FetchGeneration(); err != nil || g != s.Generation() {
		t.Fatalf("through an older agent: %d %v, store at %d", g, err, s.Generation())
	}
}
