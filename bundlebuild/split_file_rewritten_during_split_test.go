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

// TestSplitFileRewrittenDuringSplit: the bundle file is rewritten while
// split cuts it. Attack (whoever can write the file, or a build that
// finishes late): split read the file twice, once to name the bundle in
// the index (Identify) and once to cut and hash the parts, so a file
// replaced between the two gave an index naming one bundle over the
// hashes of another. One read now serves both (BUNDLE-15: the bytes that
// name the bundle are the first bytes cut), so the index names the
// manifest its parts carry; the test checks that on a clean split. A
// file rewritten in place while the parts are cut (here from the
// progress callback, after the first bytes were read) with a longer
// bundle used to give parts of a prefix of it; now the split is refused
// as io_error, and no index or part is left.
func TestSplitFileRewrittenDuringSplit(t *testing.T) {
	k := testKey(1)
	keys := []ed25519.PrivateKey{k}
	for _, delta := range []bool{false, true} {
		a, _, x := splitFullOrDelta(t, k, 2, delta)
		in, err := bundle.Inspect(bytes.NewReader(a), 0)
		if err != nil {
			t.Fatal(err)
		}
		if x.BundleID != in.Manifest.BundleID || x.Version != in.Manifest.Version {
			t.Fatalf("delta=%v: the index names %s version %d, the file holds %s version %d", delta, x.BundleID, x.Version, in.Manifest.BundleID, in.Manifest.Version)
		}
	}

	dir := t.TempDir()
	a := build(t, bigDraft(t, "org.example.aaaa", 2, 100<<10), k)
	b := build(t, bigDraft(t, "org.example.bbbb", 4, 100<<10), k)
	path := filepath.Join(dir, "s.ampb")
	if err := os.WriteFile(path, a, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "parts")
	os.MkdirAll(out, 0o755)
	rewritten := false
	_, _, err := SplitFileWith(path, out, bundle.MinPartSize, keys, SplitOptions{Progress: func(int64) {
		if !rewritten {
			rewritten = true
			if err := os.WriteFile(path, b, 0o644); err != nil {
				t.Error(err)
			}
		}
	}})
	expectName(t, err, bundle.ErrIO)
	if e := err.(*amp.Error); !strings.Contains(e.Message, "changed") {
		t.Fatalf("the refusal does not say the file changed: %v", err)
	}
	if left, _ := os.ReadDir(out); len(left) != 0 {
		t.Fatalf("a refused split left %d entries in %s", len(left), out)
	}
}
