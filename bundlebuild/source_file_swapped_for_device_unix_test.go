//go:build unix

package bundlebuild

import (
	"crypto/ed25519"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestSourceFileSwappedForADeviceIsNotOpened
//
// Attack (someone who can write in the source folder, a shared CI
// workspace): once the walk listed a schema as a regular file, it is
// replaced by a device node (hard-linked in, or made by a privileged
// job). The source file was opened beneath the folder without waiting and
// only then checked (fstat, os.SameFile: BUILD-4): open(2) of a device
// runs its driver first (a watchdog arms, a terminal becomes a
// controlling one), and the refusal came after.
//
// A FIFO with a writer waiting stands in for the device
// (regfiletest.WatchedNode). Before: the FIFO was opened, then refused.
//
// Defence (docs/SPEC-DECISIONS.md BUILD-4, amended): the file is examined
// beneath the folder before it is opened (regfile.OpenIn: on
// Linux one look through O_PATH, elsewhere lstat first); anything but a
// regular file is refused, naming the file, and never opened.
func TestSourceFileSwappedForADeviceIsNotOpened(t *testing.T) {
	dir, extra := sourceWithExtraSchema(t)
	var opened func() bool
	hooks := buildHooks{inFlight: func(int64, int64) {
		if opened != nil {
			return
		}
		if err := os.Remove(extra); err != nil {
			t.Error(err)
		}
		opened = regfiletest.WatchedNode(t, extra)
	}}
	k := testKey(1)
	_, err := loadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}, hooks)
	if opened == nil {
		t.Fatal("the hook never ran: the test no longer reaches the window between walk and read")
	}
	if err == nil || !strings.Contains(err.Error(), "schemas/extra/notes.json") {
		t.Fatalf("a schema swapped for a node: %v, want a refusal naming it", err)
	}
	if opened() {
		t.Fatal("the node put in the source file's place was opened (a device's driver would have run) before it was refused")
	}
}
