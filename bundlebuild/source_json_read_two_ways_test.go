package bundlebuild

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSourceJSONReadTwoWaysIsRefused: the attack: a contributor to a
// source folder under review (a pull request, a shared CI workspace)
// writes bundle.json or a capability.json that a reviewer, a CI policy
// check or any case-sensitive JSON reader (Python's json, jq, JavaScript)
// reads one way and the build another. The build read them with
// encoding/json, which matches a member name to a field ignoring letter
// case and lets the last of two members win: {"version": 1, …,
// "VERSION": 4000000000} was built and signed as version 4,000,000,000
// (every store's rollback mark for that bundle_id then out of the
// publisher's reach), "Expires_At": "" after a reviewed expires_at
// signed a bundle that never expires, a second "aliases" merged claims no
// reader of the first saw, and a lone surrogate escape was signed as
// U+FFFD. Now both files are read as strictjson.Decode reads a trust
// policy file: a duplicate member, a name differing from a field's only
// in case and a string read with replacement are invalid_source, naming
// the file (docs/SPEC-DECISIONS.md BUILD-12).
func TestSourceJSONReadTwoWaysIsRefused(t *testing.T) {
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	const capJSON = "capabilities/org.example.translate.text/1.0.0/capability.json"
	for _, tc := range []struct {
		name, file, text string
	}{
		{"a version member spelt in capitals after the version", "bundle.json",
			`{"bundle_id":"org.example.translate","version":1,"VERSION":4000000000,"publisher":"did:web:translator.example.org","aliases":{"translate":"org.example.translate.text"}}`},
		{"an expiry emptied by a member spelt otherwise", "bundle.json",
			`{"bundle_id":"org.example.translate","version":1,"publisher":"did:web:translator.example.org","expires_at":"2036-01-01T00:00:00Z","Expires_At":"","aliases":{"translate":"org.example.translate.text"}}`},
		{"the version twice", "bundle.json",
			`{"bundle_id":"org.example.translate","version":1,"publisher":"did:web:translator.example.org","version":7,"aliases":{"translate":"org.example.translate.text"}}`},
		{"aliases twice, merged", "bundle.json",
			`{"bundle_id":"org.example.translate","version":1,"publisher":"did:web:translator.example.org","aliases":{"translate":"org.example.translate.text"},"aliases":{"echo":"org.example.translate.text"}}`},
		{"an alias spelt with a lone surrogate escape", "bundle.json",
			`{"bundle_id":"org.example.translate","version":1,"publisher":"did:web:translator.example.org","aliases":{"tr\ud800":"org.example.translate.text"}}`},
		{"a descriptor member twice", capJSON,
			`{"notes":"first release","supported_ranges":["1.0.0"],"notes":"another release"}`},
		{"a descriptor member name with a lone surrogate escape", capJSON,
			`{"notes":"first release","x-\udc00":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
			if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(tc.file)), []byte(tc.text), 0o644); err != nil {
				t.Fatal(err)
			}
			d, err := LoadSource(dir, opts)
			if err == nil {
				t.Fatalf("built from a %s two readers read differently: bundle_id %s version %d, expires_at %v, aliases %v, capabilities %d",
					tc.file, d.BundleID, d.Version, d.ExpiresAt, d.Aliases, len(d.Capabilities))
			}
			expectName(t, err, bundle.ErrSource)
			if msg := err.Error(); !strings.HasPrefix(msg, "invalid_source: "+tc.file+": ") {
				t.Fatalf("the error does not name %s: %q", tc.file, msg)
			}
		})
	}
	// The sample itself, and a member spelt exactly, still build.
	if _, err := LoadSource(copyTree(t, filepath.Join("..", "testdata", "bundles", "translate")), opts); err != nil {
		t.Fatal(err)
	}
}
