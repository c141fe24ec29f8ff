//go:build unix

package regfile

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestSyncDirNeverOpensANodeInTheFoldersPlace
//
// Attack (a local user who can write the parent of the folder a key file
// or a bundle was just written to): the folder is swapped for a FIFO or a
// device node before SyncDir runs. Before review 85 SyncDir opened the
// name with a plain open(2): a FIFO was joined (without a writer it
// blocks for ever), a device's driver ran, and fsync of the FIFO (EINVAL)
// was taken as "this file system cannot sync a folder": SyncDir reported
// success.
// Defence (CLI-32): the name is opened only as a folder (O_DIRECTORY,
// without waiting: OpenFolder); anything else is ErrNotFolder, never
// opened, and no durability is claimed.
func TestSyncDirNeverOpensANodeInTheFoldersPlace(t *testing.T) {
	node := filepath.Join(t.TempDir(), "folder")
	opened := regfiletest.WatchedNode(t, node)
	err := SyncDir(node)
	if !errors.Is(err, ErrNotFolder) {
		t.Errorf("SyncDir of a FIFO in a folder's place: %v, want ErrNotFolder", err)
	}
	if opened() {
		t.Error("SyncDir opened the node put in the folder's place (a device's driver would have run)")
	}
}
