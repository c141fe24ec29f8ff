package catalog

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// testNow is the clock of these tests.
var testNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

func now() time.Time { return testNow }

// hostileKey is the TEST-ONLY key of the hostile publisher.
var hostileKey = ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize))

// Hostile strings a publisher may put in a bundle.
const (
	hostileNotes  = `<script>document.title="pwned";alert(1)</script><img src=x onerror=alert(2)>"'><a href="javascript:alert(3)">x</a>` + "\u202eevil\u202c"
	hostileSchema = `{"title":"</pre><script>alert(4)</script>","$comment":"javascript:alert(5)","properties":{"a\"><svg onload=alert(6)>":{"$ref":"#/$defs/x"}},"$defs":{"x":{"type":"string"}}}`
)

// examplePub reads the sample publisher's TEST-ONLY public key.
func examplePub(t testing.TB) ed25519.PublicKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", "keys", "TEST-ONLY-example-publisher.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	blk, _ := pem.Decode(data)
	if blk == nil || len(blk.Bytes) < ed25519.PublicKeySize {
		t.Fatal("no public key in the sample key file")
	}
	return ed25519.PublicKey(blk.Bytes[len(blk.Bytes)-ed25519.PublicKeySize:])
}

// hostileBundle signs a bundle org.hostile whose name, notes and schema
// carry hostile strings, expiring in 10 days.
func hostileBundle(t testing.TB) []byte {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	exp := testNow.Add(10 * 24 * time.Hour)
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.hostile", Version: 1, CreatedAt: testNow.Add(-time.Hour), ExpiresAt: &exp,
		Artifacts: []bundle.Source{bundle.BytesSource("in.json", bundle.MediaTypeSchema, []byte(hostileSchema))},
		Capabilities: []capability.Descriptor{{Name: "org.hostile.script", Version: v, Notes: hostileNotes,
			InputSchema: capability.SchemaRef{ArtifactKey: "in.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "in.json"}}},
	}, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// manyBundle signs a bundle org.many with n capabilities.
func manyBundle(t testing.TB, n int) []byte {
	t.Helper()
	v, _ := capability.ParseVersion("1.0.0")
	d := &bundle.Draft{BundleID: "org.many", Version: 1, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))}}
	for i := range n {
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: fmt.Sprintf("org.many.cap%04d", i), Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{hostileKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// newStore creates a store trusting the sample publisher for org.example
// and the hostile key for org.hostile and org.many, imports the translate
// sample and the given files, and returns its path (closed).
func newStore(t testing.TB, files ...[]byte) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "store.db")
	s, err := resolver.Open(p, resolver.Options{Create: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.TrustAdd("example", examplePub(t), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("hostile", hostileKey.Public().(ed25519.PublicKey), []string{"org.hostile", "org.many"}); err != nil {
		t.Fatal(err)
	}
	sample, err := os.ReadFile(filepath.Join("..", "testdata", "bundles", "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range append([][]byte{sample}, files...) {
		if _, err := s.Import(context.Background(), bytes.NewReader(f), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// opener opens the store at p read-only, as the mirror does.
func opener(p string) func() (Source, error) {
	return func() (Source, error) {
		return resolver.Open(p, resolver.Options{ReadOnly: true, Now: now})
	}
}

// newHandler serves the store at p.
func newHandler(t testing.TB, p string) *Handler {
	t.Helper()
	h, err := NewHandler(Options{Open: opener(p), Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return h
}
