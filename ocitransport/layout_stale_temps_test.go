//go:build unix

package ocitransport_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestKilledWritersTemporaryFilesAreRemovedOnceStale: the failure. A
// writer killed mid-blob (or mid-index) leaves blobs/sha256/.ingest-*
// (or .index.json-*), up to a whole bundle's size each, which nothing
// ever removed: a site whose copies are cut repeatedly filled its disk.
// The next writer to open the layout removes those unchanged for
// StaleLayoutTempAge, by the injected clock; younger ones (a live
// writer's), a link (never followed: its target is left), and anything
// while the layout is only read are left (docs/SPEC-DECISIONS.md OCI-24).
func TestKilledWritersTemporaryFilesAreRemovedOnceStale(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	dir := filepath.Join(t.TempDir(), "layout")
	mustOpen(t, "oci-layout:"+dir, ocitransport.Options{}, ocitransport.ReadWrite).Close()
	blobs := filepath.Join(dir, "blobs", "sha256")
	target := filepath.Join(t.TempDir(), "elsewhere")
	files := []struct {
		path  string
		age   time.Duration
		stale bool
	}{
		{filepath.Join(blobs, ".ingest-0011223344556677"), 2 * ocitransport.StaleLayoutTempAge, true},
		{filepath.Join(blobs, ".ingest-8899aabbccddeeff"), ocitransport.StaleLayoutTempAge / 24, false},
		{filepath.Join(dir, ".index.json-0011223344556677"), 2 * ocitransport.StaleLayoutTempAge, true},
		{filepath.Join(dir, ".index.json-8899aabbccddeeff"), ocitransport.StaleLayoutTempAge / 24, false},
		{filepath.Join(dir, "notes.ingest-00"), 2 * ocitransport.StaleLayoutTempAge, false},
		{target, 2 * ocitransport.StaleLayoutTempAge, false},
	}
	for _, f := range files {
		if err := os.WriteFile(f.path, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(f.path, now.Add(-f.age), now.Add(-f.age)); err != nil {
			t.Fatal(err)
		}
	}
	link := filepath.Join(dir, ".index.json-link")
	if err := os.Symlink(target, link); err != nil {
		t.Skipf("no symlink here: %v", err)
	}
	clock := func() time.Time { return now }
	mustOpen(t, "oci-layout:"+dir, ocitransport.Options{Now: clock}, ocitransport.ReadOnly).Close()
	for _, f := range files {
		if _, err := os.Lstat(f.path); err != nil {
			t.Errorf("a reader removed %s: %v", filepath.Base(f.path), err)
		}
	}
	mustOpen(t, "oci-layout:"+dir, ocitransport.Options{Now: clock}, ocitransport.ReadWrite).Close()
	for _, f := range files {
		_, err := os.Lstat(f.path)
		if gone := os.IsNotExist(err); gone != f.stale {
			t.Errorf("%s (unchanged for %s): removed %v, want %v", filepath.Base(f.path), f.age, gone, f.stale)
		}
	}
	if _, err := os.Lstat(link); err != nil {
		t.Errorf("a link named as a temporary file was removed: %v", err)
	}
}
