package bundlebuild

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestSourceWideFolderIsListedWholeBeforeRefused: the attack: BUILD-4's
// adversary (anyone who can write in the source folder, a shared CI
// workspace) puts millions of empty files in one folder of the source.
// The walk counted entries against its bound (twice maxSourceFiles,
// 220,002) only as it visited them, and filepath.WalkDir visits none of a
// folder's entries before os.ReadDir has read all of them and sorted
// them: 300,000 empty files under schemas/ cost 50 MiB and 0.66 s before
// a refusal at the 101st file (bound lowered to 100 files), and 20
// million cost gigabytes, the bound notwithstanding. Now each folder is read in
// batches and the walk stops with limit_exceeded as soon as the entries
// listed pass the bound (docs/SPEC-DECISIONS.md BUILD-11): here 20,000
// files against a bound of a few dozen, refused having allocated less
// than a quarter of what listing them costs (before: about 3 MiB, now
// about 190 KiB, one batch of 1,024). At the bound the walk lists them
// all and goes on as before.
func TestSourceWideFolderIsListedWholeBeforeRefused(t *testing.T) {
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	entries := 0 // the sample's files and folders, the root included
	if err := filepath.WalkDir(dir, func(string, os.DirEntry, error) error {
		entries++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	const flood = 20_000
	wide := filepath.Join(dir, "schemas", "flood")
	if err := os.Mkdir(wide, 0o755); err != nil {
		t.Fatal(err)
	}
	for i := range flood {
		f, err := os.Create(filepath.Join(wide, fmt.Sprintf("f%05d.json", i)))
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
	}
	// What listing the flood costs, measured here as the walk did it.
	listing := testalloc.Least(func() {
		if _, err := os.ReadDir(wide); err != nil {
			t.Fatal(err)
		}
	})

	var err error
	walk := testalloc.Least(func() { _, err = loadSource(dir, opts, buildHooks{maxFiles: entries + 5}) })
	expectName(t, err, bundle.ErrTooLarge)
	if walk > listing/4 {
		t.Fatalf("a source folder of %d entries in one folder, against a bound of %d entries, was refused after allocating %d bytes; listing that folder whole costs %d: the folder was read whole before the bound was checked",
			flood, 2*(entries+5), walk, listing)
	}
	t.Logf("refused after allocating %d bytes (listing the folder whole: %d)", walk, listing)

	// At the bound every entry is listed and the walk goes on: what
	// refuses the source then is not the bound (the flood's files are
	// empty, no schema).
	_, err = loadSource(dir, opts, buildHooks{maxFiles: entries + flood + 1})
	if err == nil || errors.Is(err, bundle.ErrTooLarge) {
		t.Fatalf("at the bound: %v, want the first empty schema refused", err)
	}
}

// allocated returns the bytes f allocates (the heap's running total).
