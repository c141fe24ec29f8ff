//go:build unix

package bundlebuild

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestPartSwappedForADeviceIsNotOpened
//
// Attack (a local user who can write the parts folder): once LocateParts
// found part 2 a regular file of the right size, the user replaces it by
// a symlink to a device node (or by a special file of its own). The
// reader opens the part by path, following the link, and only then
// checks (fstat) that it is a regular file (BUNDLE-12). open(2) of a
// device runs its driver's open: /dev/watchdog arms the watchdog and its
// close without the magic byte reboots the host, a terminal becomes the
// controlling terminal of a process without one, a tape device rewinds
// on close. The refusal comes, but after the side effect.
//
// Before: the node was opened, then refused part_mismatch. A FIFO stands
// in for the device here, as the node whose open is observable: a writer
// blocked in open(2) of the FIFO is released when a reader opens it.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-12, amended): a part that is not
// a regular file when it is reached is refused without being opened
// (lstat of the file the path leads to, then an open that follows no
// further link, and fstat must show that very file). A part the operator
// names through a link of their own is still read.
func TestPartSwappedForADeviceIsNotOpened(t *testing.T) {
	for _, viaLink := range []bool{false, true} {
		name := "special file in its place"
		if viaLink {
			name = "symlink to a node elsewhere"
		}
		t.Run(name, func(t *testing.T) {
			x, found := locatedSplit(t)
			node := found[1]
			if viaLink {
				node = filepath.Join(t.TempDir(), "device")
			}
			if err := os.Remove(found[1]); err != nil {
				t.Fatal(err)
			}
			if err := syscall.Mkfifo(node, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
			if viaLink {
				if err := os.Symlink(node, found[1]); err != nil {
					t.Skipf("no symlink here: %v", err)
				}
			}
			// The "driver": released when someone opens the node.
			opened := make(chan struct{})
			go func() {
				if w, err := os.OpenFile(node, os.O_WRONLY, 0); err == nil {
					close(opened)
					w.Close()
				}
			}()
			t.Cleanup(func() {
				// Release the writer if nobody opened the node.
				if r, err := os.OpenFile(node, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
					time.Sleep(10 * time.Millisecond)
					r.Close()
				}
			})
			pr := NewPartsReader(x, found)
			defer pr.Close()
			buf := make([]byte, 32<<10)
			var rerr error
			for rerr == nil {
				_, rerr = pr.Read(buf)
			}
			if amp.NameOf(rerr) != bundle.ErrPartMismatch {
				t.Fatalf("a part swapped for a special file: %v, want %s", rerr, bundle.ErrPartMismatch)
			}
			select {
			case <-opened:
				t.Fatal("the reader opened the special file put in part 2's place before refusing it: a device's open (a watchdog, a terminal, a tape) has run")
			case <-time.After(300 * time.Millisecond):
			}
		})
	}
}

// TestPartGivenThroughALinkIsStillRead: the operator may name a part by a
// link of their own (a file given by path, as LocateParts takes it); the
// reader resolves it and reads the regular file it leads to.
func TestPartGivenThroughALinkIsStillRead(t *testing.T) {
	x, found := locatedSplit(t)
	links := t.TempDir()
	given := slices.Clone(found)
	given[1] = filepath.Join(links, filepath.Base(found[1]))
	if err := os.Symlink(found[1], given[1]); err != nil {
		t.Skipf("no symlink here: %v", err)
	}
	located, err := LocateParts(x, given)
	if err != nil {
		t.Fatal(err)
	}
	pr := NewPartsReader(x, located)
	defer pr.Close()
	if _, err := io.Copy(io.Discard, pr); err != nil {
		t.Fatalf("a split with part 2 given through the operator's link: %v", err)
	}
}

// locatedSplit splits a bundle of several parts into a temporary folder
// and returns its verified index and the parts LocateParts found.
func locatedSplit(t *testing.T) (*bundle.PartIndex, []string) {
	t.Helper()
	k := testKey(1)
	dir := t.TempDir()
	_, index, _ := splitTo(t, bigDraft(t, "org.example.a", 4, 64<<10), k, dir, "a.ampb", bundle.MinPartSize)
	x := openIndex(t, index, trust(k, "org.example"))
	found, err := LocateParts(x, []string{filepath.Join(dir, "parts")})
	if err != nil {
		t.Fatal(err)
	}
	return x, found
}
