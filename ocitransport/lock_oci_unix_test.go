//go:build unix

package ocitransport_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestHostileLayoutLockHeldTooLongRefusesThePush: a writer that holds the
// layout's lock file (hung, or a second writer mid-push) must not be
// written past, nor waited for without end: the push waits at most
// LayoutLockWait, then fails with oci_layout_error naming the lock file,
// and index.json is as it was.
func TestHostileLayoutLockHeldTooLongRefusesThePush(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "layout")
	w := mustOpen(t, "oci-layout:"+dir, ocitransport.Options{LayoutLockWait: 200 * time.Millisecond}, ocitransport.ReadWrite)
	before, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	lf, err := os.OpenFile(filepath.Join(dir, ocitransport.LayoutLockFile), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lf.Close()
	if err := syscall.Flock(int(lf.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	_, err = w.PushBundle(context.Background(), f, "translate.ampb", "v1")
	if nameOf(err) != string(ocitransport.ErrLayout) || !strings.Contains(err.Error(), ocitransport.LayoutLockFile) {
		t.Fatalf("a push while another holds the layout's lock: %v (want oci_layout_error naming %s)", err, ocitransport.LayoutLockFile)
	}
	after, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil || string(after) != string(before) {
		t.Fatalf("a push refused for the lock changed index.json (%v):\n%s\n%s", err, before, after)
	}
	syscall.Flock(int(lf.Fd()), syscall.LOCK_UN)
	if _, err := f.Seek(0, 0); err != nil {
		t.Fatal(err)
	}
	if _, err := w.PushBundle(context.Background(), f, "translate.ampb", "v1"); err != nil {
		t.Fatalf("the push once the lock is released: %v", err)
	}
}
