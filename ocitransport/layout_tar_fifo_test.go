//go:build unix

package ocitransport_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayoutTarFIFONeverWaitedOn: the attack. Whoever may write
// into the folder a layout tar is handed over in (a shared drop folder a
// sync, an import or a `push oci-layout:X.tar:…` reads from) puts a FIFO
// at the tar's name: before the reader opens it, or after the reader
// checked it (oras-go's tar store opened the tar again by its name, with a
// blocking os.Open, for every blob it read). Before review 81 both opens
// waited in open(2) for a writer, forever: --timeout could not end them
// (review 76 closed this for layout folders only, OCI-15 amended). The
// tar is now opened once, regular only and without waiting (a FIFO there
// at the open is oci_layout_error at once), and every read is made through
// that descriptor, so what is put at the name afterwards is never opened
// (docs/SPEC-DECISIONS.md OCI-20). The bound (5 s) is generous: each is
// one open.
func TestLayoutTarFIFONeverWaitedOn(t *testing.T) {
	ctx := context.Background()
	tarPath := filepath.Join(t.TempDir(), "layout.tar")
	w := mustOpen(t, "oci-layout:"+tarPath, ocitransport.Options{MaxLayerSize: 3000}, ocitransport.ReadWrite)
	pushSample(t, w, "v1")
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}

	// After the check: the reader holds the checked tar; a FIFO is
	// renamed over its name; the pull must not wait on it.
	src := mustOpen(t, "oci-layout:"+tarPath, ocitransport.Options{}, ocitransport.ReadOnly)
	a, err := src.Resolve(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(filepath.Dir(tarPath), "fifo")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Rename(fifo, tarPath); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- src.PullFile(ctx, a, filepath.Join(t.TempDir(), "out.ampb")) }()
	notBlocked(t, done, tarPath, "a pull from a layout tar whose name became a FIFO after the check", true)

	// At the open: the FIFO is there already.
	done = make(chan error, 1)
	go func() {
		l, err := ocitransport.ParseLocation("oci-layout:" + tarPath)
		if err == nil {
			var ep *ocitransport.Endpoint
			if ep, err = ocitransport.Open(ctx, l, ocitransport.Options{}, ocitransport.ReadOnly); err == nil {
				ep.Close()
			}
		}
		done <- err
	}()
	notBlocked(t, done, tarPath, "opening a layout tar that is a FIFO", false)
}

// notBlocked waits at most 5 s for done: an error other than
// oci_layout_error (or, unless okAllowed, none) fails the test, and so
// does a wait past 5 s (the FIFO is then opened for writing until
// every blocked open ended).
func notBlocked(t *testing.T, done <-chan error, fifo, what string, okAllowed bool) {
	t.Helper()
	select {
	case err := <-done:
		if (err != nil || !okAllowed) && nameOf(err) != string(ocitransport.ErrLayout) {
			t.Errorf("%s: %v (%s), want %s", what, err, nameOf(err), ocitransport.ErrLayout)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("%s: still blocked after 5 s", what)
		for { // each blocked open is ended by a writer's open
			if w, err := os.OpenFile(fifo, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.Close()
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}
