//go:build unix

package bundlebuild

import (
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestSplitSourceSwappedForNode: the bundle file given to split is a
// node, not a regular file. Attack: whoever can write the folder the
// operator splits from puts a FIFO (standing in for a device, whose
// open(2) runs its driver) at the bundle's name. SplitFileWith opened the
// path with a plain open(2) and checked what it was afterwards: a FIFO
// blocked the split for good waiting for a writer, a device's driver ran.
// The path is now examined before it is opened, as a part is (BUNDLE-12):
// it is refused as io_error at once and never opened.
func TestSplitSourceSwappedForNode(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.ampb")
	opened := regfiletest.WatchedNode(t, path)
	done := make(chan error, 1)
	go func() {
		_, _, err := SplitFileWith(path, filepath.Join(dir, "parts"), bundle.MinPartSize, []ed25519.PrivateKey{testKey(1)}, SplitOptions{})
		done <- err
	}()
	select {
	case err := <-done:
		if name := amp.NameOf(err); name != bundle.ErrIO {
			t.Fatalf("splitting a FIFO: %v, want %s", err, bundle.ErrIO)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("splitting a FIFO still blocks after 5s")
	}
	if opened() {
		t.Fatal("the node given as the bundle was opened")
	}
}
