package bundlebuild

import (
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"
)

// TestEmptySourcePathNeverBuildsTheWorkingFolder: the attack: a build
// script that runs `ampbundle build "$SRC" ...` with SRC unset (a typo in
// a CI variable, a step that failed to export it) passes an empty source
// path; so does an embedder that calls LoadSource with a path field left
// empty. Before review 34 the walk opened "" and failed (no such file).
// The walk now makes the path absolute first (filepath.Abs, so that later
// reads do not depend on the working folder), and filepath.Abs("") is the
// working folder: whatever folder the process runs in (the repository
// root, a workspace another job shares) is walked, signed and published
// in place of a folder nobody named. ampbundle build passes "" through too
// (sourceFolder lets a path that cannot be Stat-ed reach LoadSource). Before (review 43): LoadSource("") builds the working folder. Now: an empty source path is refused before anything is read (fail
// closed, as before: the missing folder named), and the path is made
// absolute only once it has been walked as given.
func TestEmptySourcePathNeverBuildsTheWorkingFolder(t *testing.T) {
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	t.Chdir(copyTree(t, filepath.Join("..", "testdata", "bundles", "translate")))
	d, err := LoadSource("", opts)
	if err == nil {
		t.Fatalf("LoadSource(\"\") built the working folder (%s, %d artifacts): an empty source path names no folder and must be refused", d.BundleID, len(d.Artifacts))
	}
}
