//go:build unix

package ocitransport_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayoutIndexFIFOUnderTheLockIsRefused: the attack. Another user of
// a shared layout folder (one who may replace index.json, OCI-14) replaces
// index.json with a FIFO while a writer is copying into the layout (a pull
// of a large bundle leaves minutes for it). Before review 76 the writer,
// under the layout's lock file, re-read index.json (update,
// readLayoutIndex) through a blocking open(2), which waits until someone
// opens the FIFO for writing: the writer hung forever, --timeout could not
// end it (the open is not cancellable), and it held index.json.lock the
// whole time, so every other writer of the layout failed after its wait.
// The FIFO is refused at once, oci_layout_error, as the open of the layout
// refuses an index.json that is not a regular file (docs/SPEC-DECISIONS.md
// OCI-15, amended in review 76). The bound (5 s) is generous: the refusal
// is one open and one stat.
func TestLayoutIndexFIFOUnderTheLockIsRefused(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	ep := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite)
	index := filepath.Join(dir, "index.json")
	if err := os.Remove(index); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(index, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		f, err := os.Open(sampleBundle)
		if err != nil {
			done <- err
			return
		}
		defer f.Close()
		_, err = ep.PushBundle(t.Context(), f, "translate.ampb", "v1")
		done <- err
	}()
	refusedAtOnce(t, done, index, "a push onto a FIFO index.json (holding "+ocitransport.LayoutLockFile+")")
}

// refusedAtOnce waits at most 5 s for done, the end of an operation on
// the FIFO fifo, and wants it refused, oci_layout_error. Past the bound it
// opens the FIFO's other end and closes it, so the test leaves no
// goroutine stuck in open(2), and fails.
func refusedAtOnce(t *testing.T, done <-chan error, fifo, what string) {
	t.Helper()
	select {
	case err := <-done:
		if nameOf(err) != string(ocitransport.ErrLayout) {
			t.Errorf("%s: %v (%s), want %s", what, err, nameOf(err), ocitransport.ErrLayout)
		}
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Errorf("%s: still blocked after 5 s", what)
	}
}
