package bundlebuild

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSplitWithoutForceReplacesAFileThatAppearedMeanwhile: the threat
// (docs/SPEC-DECISIONS.md BUILD-15): without Force, split refuses to
// replace a part or an index already in the folder, but it looked once,
// before staging the whole bundle (minutes for a large one), and then
// moved its files in with rename(2), which replaces whatever is there: a
// file that appeared meanwhile (another split of a bundle of the same
// name into the same folder, a user's own file) was silently replaced,
// and two such splits left one's index over parts of the other. Now each
// file is placed only where nothing is (regfile.LinkNew): the name taken
// is file_exists, the file there is left as it is, and what this split
// had placed is removed again: no part and no index of it remain.
func TestSplitWithoutForceReplacesAFileThatAppearedMeanwhile(t *testing.T) {
	k := testKey(1)
	src := t.TempDir()
	path := filepath.Join(src, "b.ampb")
	if err := os.WriteFile(path, build(t, bigDraft(t, "org.example.race", 4, 64<<10), k), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, appears := range []string{"b.ampb.part001", "b.ampb.part003", "b.ampb.parts"} {
		t.Run(appears, func(t *testing.T) {
			out := t.TempDir()
			mine := filepath.Join(out, appears)
			// The file appears while the bundle is staged, after the
			// check for existing outputs.
			progress := func(int64) {
				if _, err := os.Lstat(mine); os.IsNotExist(err) {
					if err := os.WriteFile(mine, []byte("mine"), 0o644); err != nil {
						t.Error(err)
					}
				}
			}
			_, x, err := SplitFileWith(path, out, bundle.MinPartSize, []ed25519.PrivateKey{k}, SplitOptions{Progress: progress})
			if err == nil && len(x.Parts) < 3 {
				t.Fatalf("the bundle was split into %d parts; the test needs 3", len(x.Parts))
			}
			expectName(t, err, ErrFileExists)
			if got, _ := os.ReadFile(mine); string(got) != "mine" {
				t.Fatalf("%s, which appeared during the split, was replaced without Force", appears)
			}
			entries, _ := os.ReadDir(out)
			if len(entries) != 1 {
				var names []string
				for _, e := range entries {
					names = append(names, e.Name())
				}
				t.Fatalf("a refused split left %v, want only %s", names, appears)
			}
		})
	}
}
