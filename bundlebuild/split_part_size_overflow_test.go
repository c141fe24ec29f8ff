package bundlebuild

import (
	"crypto/ed25519"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestSplitPartSizeOverflow: a part count computed with an
// overflow. SplitFileWith counted parts as (size + partSize - 1) /
// partSize: a part size near math.MaxInt64 (a caller's "one part,
// whatever the size") overflowed, the count came out 0 or -1, and the
// split was refused as limit_exceeded ("a split has 1 to 10000 parts")
// after a temporary folder was made. Any part size at least the file's
// gives one part (docs/SPEC-DECISIONS.md BUNDLE-11).
func TestSplitPartSizeOverflow(t *testing.T) {
	k := testKey(1)
	dir := t.TempDir()
	file := build(t, smallDraft(t), k)
	path := filepath.Join(dir, "a.ampb")
	if err := os.WriteFile(path, file, 0o644); err != nil {
		t.Fatal(err)
	}
	size := int64(len(file))
	for i, ps := range []int64{math.MaxInt64, math.MaxInt64 - size/2, math.MaxInt64 - size + 2, 1 << 62} {
		out := filepath.Join(dir, "out", string(rune('a'+i)))
		if err := os.MkdirAll(out, 0o755); err != nil {
			t.Fatal(err)
		}
		_, x, err := SplitFileWith(path, out, ps, []ed25519.PrivateKey{k}, SplitOptions{})
		if err != nil {
			t.Fatalf("part size %d: %v", ps, err)
		}
		if len(x.Parts) != 1 || x.Parts[0].Size != uint64(size) {
			t.Fatalf("part size %d: %d parts, want one of %d bytes", ps, len(x.Parts), size)
		}
	}
}
