package bundlebuild

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestSourceWalkReadsMisplacedAndOversizedFilesWhole: the attack:
// BUILD-4's adversary, anyone who can write in the source folder (a shared
// CI workspace), drops large files where no artifact may be (assets/*.bin,
// a deeper capabilities/ path) or where only a small one may be (a
// bridge.json, a DID document). Were every file outside schemas/ read
// whole, up to 16 MiB each, and kept until classify refused the first
// misplaced key, a thousand 16 MiB files would hold 16 GiB before the
// build said "not part of the source layout", and the build host would
// run out of memory instead. Expected: a file is placed (placeSource, the
// layout's rules) and sized against its kind's limit from the walk's
// Lstat before any read (BUILD-4, amended in review 34): a misplaced file
// is refused unread, still the first in key order; a bridge over
// compat.MaxBridgeSize or a DID document over amp.MaxDIDDocumentSize is
// refused unread, naming the file. The allocation does not grow with them
// (sparse files of 15 MiB here, so the disk holds nothing).
func TestSourceWalkReadsMisplacedAndOversizedFilesWhole(t *testing.T) {
	k := testKey(1)
	opts := SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}
	const size = 15 << 20

	allocated := func(dir string) (uint64, error) {
		var err error
		a := testalloc.Least(func() { _, err = LoadSource(dir, opts) })
		return a, err
	}
	baseline, err := allocated(copyTree(t, filepath.Join("..", "testdata", "bundles", "translate")))
	if err != nil {
		t.Fatal(err)
	}
	const capDir = "capabilities/org.example.translate.text/1.0.0/"
	for _, tc := range []struct {
		name  string
		files []string // sparse files of size bytes, slash paths
		names string   // the file the refusal must name
		says  string   // and what it must say
	}{
		{"misplaced files", []string{"assets/blob0.bin", "assets/blob1.bin", "assets/blob2.bin", "assets/blob3.bin"},
			"assets/blob0.bin", "not part of the source layout"},
		{"misplaced next to a deeper capability path", []string{capDir + "extra/big.json", "zz/big.bin"},
			capDir + "extra/big.json", "not part of the source layout"},
		{"oversized bridge", []string{capDir + "bridge.json"}, capDir + "bridge.json", "larger than 64 KiB"},
		{"oversized did document", []string{"dids/big.json"}, "dids/big.json", "larger than 256 KiB"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
			for _, f := range tc.files {
				writeSparse(t, filepath.Join(dir, filepath.FromSlash(f)), size)
			}
			got, err := allocated(dir)
			if err == nil {
				t.Fatal("a source with misplaced or oversized files was accepted")
			}
			if msg := err.Error(); !strings.Contains(msg, tc.names) || !strings.Contains(msg, tc.says) {
				t.Fatalf("refused with %q, want it to name %s and say %q", msg, tc.names, tc.says)
			}
			if extra := int64(got) - int64(baseline); extra > 2<<20 {
				t.Fatalf("%d files of %d MiB made LoadSource allocate %d MiB more than the same source without them (%d -> %d bytes): a file was read before it was placed and sized",
					len(tc.files), size>>20, extra>>20, baseline, got)
			}
		})
	}
}

// writeSparse creates the file p, and its folders, of size zero bytes that
// take no disk.
func writeSparse(t *testing.T, p string, size int64) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(p, size); err != nil {
		t.Fatal(err)
	}
}
