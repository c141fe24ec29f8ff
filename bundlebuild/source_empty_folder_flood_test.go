package bundlebuild

import (
	"crypto/ed25519"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSourceFolderFloodedWithEmptyFoldersIsRefused: the attack: BUILD-4's
// adversary (anyone who can write in the source folder, a shared CI
// workspace) cannot pass maxSourceFiles with files any more, so it drops
// empty folders instead: a million of them under schemas/ (or nested
// folders under any name). The walk counts only regular files against
// maxFiles (len(sd.seen)); a folder is listed, read (one getdents and one
// lstat each) and walked for free, so the walk's time and the kernel's
// dentry cache grow without bound and no refusal ever comes: with the
// bound lowered to 20, thirty empty folders are walked and the source is
// built. Before (review 43): LoadSource accepts the source. Now: every entry the walk lists (folders as well as files) counts
// against the bound (hooks.maxFiles here; in production maxSourceFiles
// raised by the folders a source that could be built needs, or a bound of
// folders of its own, with a depth no key can reach refused), and the walk
// stops with limit_exceeded once it is passed.
func TestSourceFolderFloodedWithEmptyFoldersIsRefused(t *testing.T) {
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	for _, tc := range []struct {
		name string
		make func(t *testing.T, dir string)
	}{
		{"wide: empty folders side by side under schemas/", func(t *testing.T, dir string) {
			for i := range 40 {
				if err := os.MkdirAll(filepath.Join(dir, "schemas", fmt.Sprintf("empty%02d", i)), 0o755); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"deep: empty folders nested in one another", func(t *testing.T, dir string) {
			if err := os.MkdirAll(filepath.Join(dir, "schemas", strings.Repeat("d/", 40)), 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
			entries := 0 // the sample's files and folders, the root included
			if err := filepath.WalkDir(dir, func(string, os.DirEntry, error) error {
				entries++
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			tc.make(t, dir)
			// The bound leaves room for every file and folder of the
			// sample source, and a few more, not for the flood of 40.
			bound := entries + 5
			_, err := loadSource(dir, opts, buildHooks{maxFiles: bound})
			if err == nil {
				t.Fatalf("a source folder of %d entries and 40 more empty folders, against a bound of %d, was walked and accepted: folders are listed for free", entries, bound)
			}
			expectName(t, err, bundle.ErrTooLarge)
		})
	}
}
