//go:build linux

package regfile

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestFakeProcPlantedNodeIsNeverOpened
//
// Attack (a chroot or container whose /proc is a plain folder, or a /proc
// mounted over, that a local user can fill): Open reopens the examined
// descriptor through /proc/self/fd/N without checking that this is the
// proc file system. Where /proc/self/fd/N is a link the user planted to a
// FIFO or a device, before review 85 that node was opened (the FIFO joined, the
// driver run) and only then refused by os.SameFile.
// Defence (BUNDLE-20): the descriptor is reopened only through a folder
// that is procfs (fstatfs: PROC_SUPER_MAGIC); any other /proc is "no
// /proc" (the examine-then-open fallback), and the planted node is never
// opened.
func TestFakeProcPlantedNodeIsNeverOpened(t *testing.T) {
	dir := t.TempDir()
	fake := filepath.Join(dir, "proc")
	if err := os.Mkdir(fake, 0o700); err != nil {
		t.Fatal(err)
	}
	opened := regfiletest.WatchedNode(t, filepath.Join(dir, "node"))
	for i := range 1024 {
		if err := os.Symlink(filepath.Join(dir, "node"), filepath.Join(fake, strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, _, err := viaProc(fake+"/").open(file, NoLinks)
	if err != nil {
		t.Errorf("a regular file under a fake /proc: %v, want it read by the fallback", err)
	} else {
		f.Close()
	}
	if opened() {
		t.Error("the node planted in a fake /proc/self/fd was opened")
	}
}
