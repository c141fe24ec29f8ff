package bundlebuild

import (
	"crypto/ed25519"
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSourceDraftWrittenAfterWorkingFolderChanged: the source folder is
// opened again for every read, until the draft is written (BUILD-4,
// amended in review 34). An embedder that loads a relative source folder
// and changes its working folder before writing must still get the files
// of the folder it loaded, never those of a folder of the same name below
// the new working folder: the folder is made absolute when walked.
func TestSourceDraftWrittenAfterWorkingFolderChanged(t *testing.T) {
	src := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	t.Chdir(filepath.Dir(src))
	d, err := LoadSource(filepath.Base(src), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir()) // no folder of that name here
	if _, err := bundle.Write(io.Discard, d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
		t.Fatalf("a draft loaded from a relative folder could not be written after the working folder changed: %v", err)
	}
}
