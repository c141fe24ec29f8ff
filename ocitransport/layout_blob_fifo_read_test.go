//go:build unix

package ocitransport_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestLayoutBlobFIFOSwappedInAfterTheCheckIsRefused: the attack. Whoever may
// write into a layout folder another reads (a shared drop folder a sync,
// an import or a `push oci-layout:…` reads from) replaces a blob with a
// FIFO after the reader checked the folder (checkLayoutDir refuses one
// that is there at the open). Before review 76 the reader's store read the
// folder through os.DirFS, which opens the FIFO in blocking mode: the read
// hung in open(2) until someone wrote to it, forever, and --timeout could
// not end it (the open is not cancellable); a symbolic link put there was
// followed. Any blob that is not a regular file is now refused at once,
// oci_layout_error (docs/SPEC-DECISIONS.md OCI-15, amended in review 76).
// The bound (5 s) is generous: the refusal is one open and one stat.
func TestLayoutBlobFIFOSwappedInAfterTheCheckIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "layout")
	a := pushSample(t, mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite), "v1")
	src := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadOnly)
	got, err := src.Resolve(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	blob := filepath.Join(dir, "blobs", "sha256", a.Manifest.Layers[0].Digest.Encoded())
	if err := os.Remove(blob); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(blob, 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	out := filepath.Join(t.TempDir(), "out.ampb")
	done := make(chan error, 1)
	go func() { done <- src.PullFile(ctx, got, out) }()
	refusedAtOnce(t, done, blob, "a pull of a blob swapped for a FIFO")
}
