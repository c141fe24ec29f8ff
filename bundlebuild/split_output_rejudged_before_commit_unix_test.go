//go:build unix

package bundlebuild

import (
	"crypto/ed25519"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSplitWithForceJudgesItsNamesAgainBeforeTheCommit: the review of
// CLI-105 found that split --force judged its names only before staging:
// a FIFO (or any node) put at a part's name while the parts were written
// was renamed over, and the old index removed first. Now every name is
// judged again just before the old index is removed and each rename:
// io_error, the node stays as it was and the old index is kept
// (docs/SPEC-DECISIONS.md CLI-105).
func TestSplitWithForceJudgesItsNamesAgainBeforeTheCommit(t *testing.T) {
	k := testKey(1)
	src := t.TempDir()
	path := filepath.Join(src, "b.ampb")
	if err := os.WriteFile(path, build(t, bigDraft(t, "org.example.nodes", 4, 64<<10), k), 0o644); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	oldIndex := filepath.Join(out, "b.ampb.parts")
	if err := os.WriteFile(oldIndex, []byte("the old index"), 0o644); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(out, "b.ampb.part001")
	made := false
	_, _, err := SplitFileWith(path, out, bundle.MinPartSize, []ed25519.PrivateKey{k}, SplitOptions{Force: true, Progress: func(int64) {
		if !made {
			made = true
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Error(err)
			}
		}
	}})
	expectName(t, err, bundle.ErrIO)
	if st, lerr := os.Lstat(fifo); lerr != nil || st.Mode().Type() != fs.ModeNamedPipe {
		t.Fatalf("the FIFO put at a part's name is now %v (%v)", st.Mode().Type(), lerr)
	}
	if b, err := os.ReadFile(oldIndex); err != nil || string(b) != "the old index" {
		t.Fatalf("the old index is now %q (%v), want it kept", b, err)
	}
}
