package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestPartIndexOfAnotherBundle: an index whose hashes are those of one
// bundle's parts but which names another bundle_id or version (signed
// by a key trusted for the name it gives). Every part matches, so the
// stream read clean and a reader of the index believed it was the
// signer's release. The first Read of the parts checks the bundle they
// carry (the first item: a full bundle's manifest, a delta's header)
// against the index and refuses a difference as part_mismatch, naming
// both; the bundle inside is otherwise untouched (its own bytes still
// verify when the index is right), full or delta.
// docs/SPEC-DECISIONS.md BUNDLE-14.
func TestPartIndexOfAnotherBundle(t *testing.T) {
	k, other := testKey(1), testKey(2)
	p := &bundle.Policy{Keys: []bundle.TrustedKey{
		{Name: "k", Key: k.Public().(ed25519.PublicKey), Scopes: []string{"org.example"}},
		{Name: "other", Key: other.Public().(ed25519.PublicKey), Scopes: []string{"*"}},
	}}
	for _, delta := range []bool{false, true} {
		t.Run(map[bool]string{false: "full", true: "delta"}[delta], func(t *testing.T) {
			anotherBundleCase(t, k, other, p, delta)
		})
	}
}

// anotherBundleCase splits a bundle (or a delta) and reads its parts
// under its own index, then under indexes naming other bundles.
func anotherBundleCase(t *testing.T, k, other ed25519.PrivateKey, p *bundle.Policy, delta bool) {
	_, parts, x := splitFullOrDelta(t, k, 3, delta)
	if err := readParts(x, p, parts); err != nil {
		t.Fatalf("the right index: %v", err)
	}
	for _, tc := range []struct {
		id      string
		version uint64
	}{{"org.other.bbbb", x.Version}, {x.BundleID, x.Version + 1}, {x.BundleID, x.Version - 1}} {
		y := *x
		y.BundleID, y.Version = tc.id, tc.version
		if _, err := bundle.SignPartIndex(&y, []ed25519.PrivateKey{other}); err != nil {
			t.Fatal(err)
		}
		err := readParts(&y, p, parts)
		expectName(t, err, bundle.ErrPartMismatch)
		if e := err.(*amp.Error); !strings.Contains(e.Message, tc.id) || !strings.Contains(e.Message, x.BundleID) {
			t.Fatalf("%s version %d: the refusal does not name both bundles: %v", tc.id, tc.version, err)
		}
	}
}

// splitFullOrDelta builds a bundle of n artifacts signed by k (or, when
// delta, a delta to the next version with n+1 artifacts over it), splits
// it into a temporary folder and returns the bundle file, the parts
// folder and the split's index.
func splitFullOrDelta(t *testing.T, k ed25519.PrivateKey, n int, delta bool) (file []byte, parts string, x *bundle.PartIndex) {
	t.Helper()
	dir := t.TempDir()
	file = build(t, bigDraft(t, "org.example.aaaa", n, 100<<10), k)
	if delta {
		in, err := bundle.Inspect(bytes.NewReader(file), 0)
		if err != nil {
			t.Fatal(err)
		}
		d := bigDraft(t, "org.example.aaaa", n+1, 100<<10)
		d.Version = in.Manifest.Version + 1
		var b bytes.Buffer
		if _, _, err := bundle.WriteDelta(&b, d, []ed25519.PrivateKey{k}, in.SignedManifest, bundle.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		file = b.Bytes()
	}
	path := filepath.Join(dir, "s.ampb")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	parts = filepath.Join(dir, "parts")
	if err := os.MkdirAll(parts, 0o755); err != nil {
		t.Fatal(err)
	}
	_, x, err := SplitFile(path, parts, bundle.MinPartSize, []ed25519.PrivateKey{k})
	if err != nil {
		t.Fatal(err)
	}
	return file, parts, x
}
