//go:build unix

package bundlebuild

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestSourceHardLinkToOutsideFileIsSigned: anyone who can write in the
// source folder (a shared CI workspace) hard-links into it a file of the
// publisher's that lies outside it, say a credentials file that is a JSON
// object: where the kernel does not stop users linking files they cannot
// read (protected_hardlinks off, macOS, the BSDs), any file on the same
// file system whose folder they can search. The walk took it as a regular
// file of the folder, and the publisher's build, reading it with the
// publisher's rights, signed its bytes into the bundle as a schema (a JSON
// object is a schema). Expected: a source file with another name is
// refused (invalid_source, naming it, saying it is a hard link), wherever
// it is placed, before anything is read or signed.
func TestSourceHardLinkToOutsideFileIsSigned(t *testing.T) {
	for _, rel := range []string{"schemas/leak/creds.json", "dids/creds.json", "notes/creds.json"} {
		t.Run(rel, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
			secret := filepath.Join(t.TempDir(), "credentials.json")
			if err := os.WriteFile(secret, []byte(`{"token":"s3cr3t-publisher-token"}`), 0o600); err != nil {
				t.Fatal(err)
			}
			p := filepath.Join(dir, filepath.FromSlash(rel))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Link(secret, p); err != nil {
				t.Skipf("cannot make a hard link here: %v", err)
			}
			k := testKey(1)
			d, err := LoadSource(dir, SourceOptions{CreatedAt: sampleCreated, Signer: k.Public().(ed25519.PublicKey), Workers: 2})
			if err == nil {
				for _, a := range d.Artifacts {
					if a.Key == rel {
						t.Fatalf("the hard link %s to a file outside the source folder is an artifact of the bundle", rel)
					}
				}
				t.Fatalf("the source with the hard link %s was built", rel)
			}
			if msg := amp.AsError(err).Message; !errors.Is(err, bundle.ErrSource) || !strings.HasPrefix(msg, rel+": ") || !strings.Contains(msg, "hard link") {
				t.Fatalf("got %v, want %s naming %s as a hard link", err, bundle.ErrSource, rel)
			}
		})
	}
}
