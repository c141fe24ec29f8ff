//go:build unix

package bundlebuild

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestStaleTempSwappedForADeviceIsNotOpened
//
// Attack (a local user who can write an output folder): the clean-up of
// a killed run's temporary files lists a stale one as a regular file
// (Lstat), and the user swaps it for a device node before removeUnlocked
// opens it to take its lock. The open followed no link and did not wait,
// but it opened the node, running a device's driver, before os.SameFile
// refused it.
//
// A FIFO with a writer waiting stands in for the device
// (regfiletest.WatchedNode). Before: the FIFO was opened, then left. Defence: the entry is opened as what the listing saw (a file
// examined before it is opened, internal/regfile), so the node is never
// opened, and it is left in place.
func TestStaleTempSwappedForADeviceIsNotOpened(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, ".ampbundle-join-1.tmp")
	if err := os.WriteFile(p, []byte("left by a killed run"), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	// The swap, after the listing.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	opened := regfiletest.WatchedNode(t, p)
	if removeUnlocked(p, st) {
		t.Fatal("a node swapped in for a stale temporary file was removed as that file")
	}
	if opened() {
		t.Fatal("the node swapped in for a stale temporary file was opened (a device's driver would have run)")
	}
	if _, err := os.Lstat(p); err != nil {
		t.Fatalf("the node was removed: %v", err)
	}
}
