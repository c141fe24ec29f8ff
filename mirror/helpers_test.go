package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// testKey is the TEST-ONLY publisher key of these tests.
var testKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, ed25519.SeedSize))

var testNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// testBundle signs a one-capability bundle org.example.echo at version v
// (capability version 1.<v>.0), with a schema that differs per version.
func testBundle(t testing.TB, v uint64) []byte {
	t.Helper()
	version, err := capability.ParseVersion("1." + string(rune('0'+v)) + ".0")
	if err != nil {
		t.Fatal(err)
	}
	schema := []byte(`{"type":"object","required":["text"],"title":"echo v` + string(rune('0'+v)) + `"}`)
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.example.echo", Version: v, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("echo.json", bundle.MediaTypeSchema, schema)},
		Capabilities: []capability.Descriptor{{Name: "org.example.echo", Version: version,
			InputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}}},
	}, []ed25519.PrivateKey{testKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// newStore creates a store trusting testKey for org.example and imports
// the given bundle files; it returns the store's path (closed).
func newStore(t testing.TB, files ...[]byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "store.db")
	s, err := resolver.Open(p, resolver.Options{Create: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.TrustAdd("example", testKey.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if _, err := s.Import(context.Background(), bytes.NewReader(f), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// openerOf opens the store at p read-only, as 'ampbundle serve' does.
func openerOf(p string) func() (Source, error) {
	return func() (Source, error) {
		return resolver.Open(p, resolver.Options{ReadOnly: true, Now: func() time.Time { return testNow }})
	}
}

// startMirror serves the store at p on 127.0.0.1.
func startMirror(t testing.TB, p string, mod func(*Options)) (*Server, *httptest.Server) {
	t.Helper()
	opts := Options{Open: openerOf(p), SpoolDir: filepath.Join(t.TempDir(), "spool")}
	if mod != nil {
		mod(&opts)
	}
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(m)
	t.Cleanup(ts.Close)
	return m, ts
}

func globSpool(t testing.TB, m *Server) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(m.opts.SpoolDir, "*.bundle"))
	if err != nil {
		t.Fatal(err)
	}
	return names
}
