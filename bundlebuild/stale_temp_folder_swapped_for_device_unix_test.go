//go:build unix

package bundlebuild

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestStaleTempCleanupInBatchesNeverOpensANodeInItsFoldersPlace: a
// guard, not a finding (docs/SPEC-DECISIONS.md BUILD-13). Every join,
// split, export and stdio run first cleans the folder it writes to
// (RemoveStaleTemps), before its own checks, and whoever can write the
// folder above it may put a FIFO or a device node, or a link to one, in
// its place. os.ReadDir opened the folder with O_DIRECTORY (Go's own
// openDir), so the node was never opened; reading in batches needs an
// *os.File, and os.Open has no O_DIRECTORY: a FIFO without a writer then
// blocks the command for ever, and a device's driver runs (a watchdog
// armed, BUNDLE-12) before the listing fails (measured: both, with
// os.Open in its place). The folder is opened only as a folder, without
// waiting (regfile.OpenFolder). A FIFO with a writer waiting stands in for
// the device (regfiletest.WatchedNode).
func TestStaleTempCleanupInBatchesNeverOpensANodeInItsFoldersPlace(t *testing.T) {
	now := time.Now()
	t.Run("device", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "out")
		opened := regfiletest.WatchedNode(t, dir)
		if removed := RemoveStaleTemps(dir, now); len(removed) != 0 {
			t.Fatalf("removed %v from a node", removed)
		}
		if opened() {
			t.Fatal("the node put in the place of the folder cleaned was opened (a device's driver would have run)")
		}
	})
	t.Run("FIFO without a writer", func(t *testing.T) {
		base := t.TempDir()
		fifo := filepath.Join(base, "fifo")
		if err := unix.Mkfifo(fifo, 0o600); err != nil {
			t.Skipf("no FIFO here: %v", err)
		}
		dir := filepath.Join(base, "out")
		if err := os.Symlink(fifo, dir); err != nil { // a link to it: the operator's links are followed
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			RemoveStaleTemps(dir, now)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			if w, err := os.OpenFile(fifo, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil { // release the stuck open
				w.Close()
			}
			<-done
			t.Fatal("RemoveStaleTemps blocked opening a FIFO put in the place of the folder it cleans")
		}
	})
}
