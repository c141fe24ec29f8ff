package bundle

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// FuzzReader feeds arbitrary bytes to the reader under a policy that
// trusts the seed bundles' keys: no panic, every error is an *amp.Error with
// a name, and an accepted bundle re-encodes its manifest identically.
func FuzzReader(f *testing.F) {
	k := testKey(1)
	f.Add(build(f, smallDraft(f), k))
	f.Add(build(f, smallDraft(f), k, testKey(2)))
	f.Add(overNestedBundle(f, k)) // a manifest over a reader's nesting limit (BUNDLE-27)
	samples, _ := filepath.Glob(filepath.Join("..", "testdata", "bundles", "*.ampb"))
	for _, s := range samples {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	policy := trust(k, "*")
	if pubs, _ := filepath.Glob(filepath.Join("..", "testdata", "bundles", "keys", "*.pub.pem")); len(pubs) > 0 {
		policy = sampleTrust(f, "*")
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r, arts, err := readAll(data, policy, testNow)
		if err != nil {
			var e *amp.Error
			if !errors.As(err, &e) || e.Name == "" || e.Message == "" {
				t.Fatalf("error without a name: %#v", err)
			}
			return
		}
		m := r.Manifest()
		again, err := m.Encode()
		if err != nil {
			t.Fatalf("accepted manifest does not re-encode: %v", err)
		}
		if !bytes.Contains(data, again) {
			t.Fatal("accepted manifest re-encodes differently")
		}
		if len(arts) != len(m.Artifacts) {
			t.Fatalf("%d artifacts read, manifest lists %d", len(arts), len(m.Artifacts))
		}
		if _, err := r.Next(); err != io.EOF {
			t.Fatalf("after the last artifact: %v", err)
		}
	})
}
