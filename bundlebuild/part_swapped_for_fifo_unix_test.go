//go:build unix

package bundlebuild

import (
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestPartSwappedForFIFO: a part swapped for a FIFO after the
// parts were located. Attack: whoever can write the folder the parts are
// read from (a shared drop folder, a mounted medium) replaces part 2,
// once LocateParts checked it is a regular file of the right size, by a
// FIFO of its name. PartsReader used to open each part by path when it
// reached it, and open(2) of a FIFO waits for a writer: the read, and the
// import holding the store's write lock around it, hung for good. A part
// is opened without waiting (as the source build opens its files,
// docs/SPEC-DECISIONS.md BUILD-4) and refused as part_mismatch when what
// was opened is not a regular file of the size the index says (BUNDLE-12).
func TestPartSwappedForFIFO(t *testing.T) {
	x, found := locatedSplit(t)
	if err := os.Remove(found[1]); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(found[1], 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	pr := NewPartsReader(x, found)
	defer pr.Close()
	done := make(chan error, 1)
	go func() {
		_, err := io.Copy(io.Discard, pr)
		done <- err
	}()
	select {
	case err := <-done:
		if name := amp.NameOf(err); name != bundle.ErrPartMismatch {
			t.Fatalf("a part swapped for a FIFO: %v, want %s", err, bundle.ErrPartMismatch)
		}
	case <-time.After(20 * time.Second): // a hang guard: a FIFO's open waits for a writer forever
		// Release the reader blocked in open: a writer that opens and
		// closes gives it an empty part.
		if w, err := os.OpenFile(found[1], os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatal("reading a split whose part 2 was swapped for a FIFO still blocks after 20s")
	}
}
