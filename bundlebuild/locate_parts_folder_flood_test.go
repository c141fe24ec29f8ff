package bundlebuild

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestLocatePartsFolderFlood: the parts are searched for in folders the
// operator names, which whoever shares the medium fills. Attack (a user
// who can write the folder, or a medium prepared by a peer): millions of
// entries beside the parts. LocateParts read the whole folder into memory
// (os.ReadDir, every name sorted) before looking at one, however many
// there were. It now reads batches of entries and examines at most
// MaxLocateEntries over all the folders given (here lowered), refusing
// beyond as limit_exceeded before any part is read; at the limit the
// parts are found as before, across several batches and folders
// (docs/SPEC-DECISIONS.md BUNDLE-16).
func TestLocatePartsFolderFlood(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	_, _, x := splitTo(t, bigDraft(t, "org.example.aaaa", 3, 100<<10), k, dir, "s.ampb", bundle.MinPartSize)
	parts := filepath.Join(dir, "parts")
	other := t.TempDir()
	const filler = 2 * locateBatch
	for i := range filler {
		if err := os.WriteFile(filepath.Join(other, fmt.Sprintf("other-%05d", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(parts)
	if err != nil {
		t.Fatal(err)
	}
	total := len(entries) + filler
	if _, err := locateParts(x, []string{other, parts}, total); err != nil {
		t.Fatalf("at the limit (%d entries): %v", total, err)
	}
	_, err = locateParts(x, []string{other, parts}, total-1)
	expectName(t, err, bundle.ErrTooLarge)
	// The same folder given twice counts twice.
	_, err = locateParts(x, []string{other, other, parts}, filler+1)
	expectName(t, err, bundle.ErrTooLarge)
	// A part file given by its path is not a folder entry.
	var files []string
	for _, p := range x.Parts {
		files = append(files, filepath.Join(parts, p.Name))
	}
	if _, err := locateParts(x, files, 0); err != nil {
		t.Fatalf("parts given as files: %v", err)
	}
}
