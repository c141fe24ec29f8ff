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
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestSourceWalkKeepsWellPlacedFilesWithoutTotal: the attack: BUILD-4's
// adversary, once misplaced and oversized files are refused unread, puts
// the large files where the layout allows them: a capability.json of up to
// 16 MiB in as many capability folders as it likes (or thousands of DID
// documents of 256 KiB). The walk reads and keeps every such file until
// the source is checked, so without a total a thousand capability folders
// hold 16 GiB. Expected: the files the walk keeps are at most
// maxSourceKept bytes together (BUILD-4, amended in review 34), the file
// that would cross it refused unread, naming it: the allocation stays
// under that bound, whatever the number of files (sparse files of 15 MiB
// here, so the disk holds nothing).
func TestSourceWalkKeepsWellPlacedFilesWithoutTotal(t *testing.T) {
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	const files, size = 7, 15 << 20
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	for i := range files {
		writeSparse(t, filepath.Join(dir, "capabilities", fmt.Sprintf("org.example.big%d", i), "1.0.0", "capability.json"), size)
	}
	var err error
	got := testalloc.Least(func() { _, err = LoadSource(dir, opts) })
	if err == nil {
		t.Fatal("a source of 105 MiB of capability.json files was accepted")
	}
	if !strings.Contains(err.Error(), "64 MiB together") || !strings.Contains(err.Error(), "capability.json") {
		t.Fatalf("refused with %q, want the file that crosses the 64 MiB total named", err)
	}
	if got > maxSourceKept+2<<20 {
		t.Fatalf("%d capability.json files of %d MiB made LoadSource allocate %d MiB: the walk keeps well-placed files without a total", files, size>>20, got>>20)
	}
}

// TestSourceFolderWithMoreFilesThanABundleCanList: the attack: a million
// empty files dropped in the source folder. Each one the walk lists costs
// memory (what the walk saw of it, its folded key), and nothing the walk
// lists can be dropped before the layout is checked. Expected: the walk
// stops at maxSourceFiles, one more than the artifacts and descriptors a
// manifest can list (so that no source that could be built is refused),
// with limit_exceeded (BUILD-4, amended in review 34). The hook lowers the
// bound to what a test can create.
func TestSourceFolderWithMoreFilesThanABundleCanList(t *testing.T) {
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	if err := os.Mkdir(filepath.Join(dir, "dids"), 0o755); err != nil && !os.IsExist(err) {
		t.Fatal(err)
	}
	for i := range 20 {
		if err := os.WriteFile(filepath.Join(dir, "dids", fmt.Sprintf("flood%02d.json", i)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, err := loadSource(dir, opts, buildHooks{maxFiles: 20})
	expectName(t, err, bundle.ErrTooLarge)
}
