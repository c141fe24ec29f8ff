//go:build unix

package ocitransport_test

import (
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestKilledTarWritersLayoutFoldersAreRemovedOnceStale: the failure. A
// writer of a layout tar builds the layout in a folder next to the tar,
// .NAME.layout-DIGITS, up to the whole layout's size; one killed (or cut
// by a power loss) left it, and nothing ever removed it: a site whose tar
// copies were cut repeatedly filled its disk. The next writer of that tar
// removes those in which nothing changed for StaleLayoutTempAge, by the
// injected clock, and that no live writer holds locked. Left: a younger
// one, a stale one in which one file is young (a live writer's), one a
// live process holds locked, a link named so (its target untouched), a
// file named so, names not exactly the writer's, another tar's folders,
// and everything while the tar is only read; a link inside a removed
// folder is removed, never followed (docs/SPEC-DECISIONS.md OCI-25).
func TestKilledTarWritersLayoutFoldersAreRemovedOnceStale(t *testing.T) {
	now := time.Date(2031, 1, 2, 3, 4, 5, 0, time.UTC)
	stale, young := now.Add(-2*ocitransport.StaleLayoutTempAge), now.Add(-ocitransport.StaleLayoutTempAge/24)
	dir := t.TempDir()
	tar := filepath.Join(dir, "site.tar")
	outside := filepath.Join(t.TempDir(), "outside")
	mustMkdir(t, outside)
	mustWrite(t, filepath.Join(outside, "keep"))
	setTimes(t, outside, stale)

	// A layout as a killed writer leaves it, every time set to at.
	layoutAt := func(name string, at time.Time) string {
		p := filepath.Join(dir, name)
		mustMkdir(t, filepath.Join(p, "blobs", "sha256"))
		mustWrite(t, filepath.Join(p, "oci-layout"))
		mustWrite(t, filepath.Join(p, "index.json"))
		mustWrite(t, filepath.Join(p, "blobs", "sha256", ".ingest-0011"))
		if err := os.Chmod(p, 0o700); err != nil { // as os.MkdirTemp makes it
			t.Fatal(err)
		}
		setTimes(t, p, at)
		return p
	}
	folders := []struct {
		name   string
		make   func(p string)
		remove bool
	}{
		{".site.tar.layout-1234567890", func(p string) { layoutAt(filepath.Base(p), stale) }, true},
		{".site.tar.layout-42", func(p string) {
			layoutAt(filepath.Base(p), stale)
			if err := os.Symlink(outside, filepath.Join(p, "blobs", "elsewhere")); err != nil {
				t.Fatal(err)
			}
			setTimes(t, p, stale)
		}, true},
		{".site.tar.layout-2", func(p string) { layoutAt(filepath.Base(p), young) }, false},
		// A folder of ours another user renamed to the writer's pattern
		// (the tar's folder is theirs to write, no sticky bit): one others
		// may read, or one that holds more than a layout, is not the
		// writer's and is never removed (OCI-26, amended).
		{".site.tar.layout-95", func(p string) {
			layoutAt(filepath.Base(p), stale)
			if err := os.Chmod(p, 0o755); err != nil {
				t.Fatal(err)
			}
			setTimes(t, p, stale)
		}, false},
		{".site.tar.layout-96", func(p string) {
			layoutAt(filepath.Base(p), stale)
			mustWrite(t, filepath.Join(p, "thesis.tex"))
			setTimes(t, p, stale)
		}, false},
		{".site.tar.layout-3", func(p string) {
			layoutAt(filepath.Base(p), stale)
			blob := filepath.Join(p, "blobs", "sha256", ".ingest-0011")
			if err := os.Chtimes(blob, young, young); err != nil {
				t.Fatal(err)
			}
		}, false},
		{".site.tar.layout-4", func(p string) {
			layoutAt(filepath.Base(p), stale)
			d, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { d.Close() })
			if err := syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
				t.Skipf("no flock here: %v", err)
			}
		}, false},
		{".site.tar.layout-5", func(p string) {
			if err := os.Symlink(outside, p); err != nil {
				t.Fatal(err)
			}
		}, false},
		{".site.tar.layout-6", func(p string) { mustWrite(t, p); setTimes(t, p, stale) }, false},
		{".site.tar.layout-", func(p string) { layoutAt(filepath.Base(p), stale) }, false},
		{".site.tar.layout-12a", func(p string) { layoutAt(filepath.Base(p), stale) }, false},
		{".site.tar.layout-123456789012345678901", func(p string) { layoutAt(filepath.Base(p), stale) }, false},
		{"site.tar.layout-7", func(p string) { layoutAt(filepath.Base(p), stale) }, false},
		{".other.tar.layout-8", func(p string) { layoutAt(filepath.Base(p), stale) }, false},
	}
	for _, f := range folders {
		f.make(filepath.Join(dir, f.name))
	}
	// The tar, written while none of them is stale yet.
	old := func() time.Time { return now.Add(-10 * ocitransport.StaleLayoutTempAge) }
	w := mustOpen(t, "oci-layout:"+tar, ocitransport.Options{Now: old}, ocitransport.ReadWrite)
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return now }
	mustOpen(t, "oci-layout:"+tar, ocitransport.Options{Now: clock}, ocitransport.ReadOnly).Close()
	for _, f := range folders {
		if _, err := os.Lstat(filepath.Join(dir, f.name)); err != nil {
			t.Errorf("a reader, or a writer before the age, removed %s: %v", f.name, err)
		}
	}
	w = mustOpen(t, "oci-layout:"+tar, ocitransport.Options{Now: clock}, ocitransport.ReadWrite)
	w.Close()
	for _, f := range folders {
		_, err := os.Lstat(filepath.Join(dir, f.name))
		if gone := os.IsNotExist(err); gone != f.remove {
			t.Errorf("%s: removed %v, want %v", f.name, gone, f.remove)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Errorf("a link's target was removed: %v", err)
	}
	if _, err := os.Stat(tar); err != nil {
		t.Errorf("the tar: %v", err)
	}
}

func mustMkdir(t *testing.T, p string) {
	t.Helper()
	if err := os.MkdirAll(p, 0o755); err != nil {
		t.Fatal(err)
	}
}

func mustWrite(t *testing.T, p string) {
	t.Helper()
	if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// setTimes sets the times of p and everything in it (links not
// followed, left as they are) to at.
func setTimes(t *testing.T, p string, at time.Time) {
	t.Helper()
	err := filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || d.Type()&fs.ModeSymlink != 0 {
			return err
		}
		return os.Chtimes(q, at, at)
	})
	if err != nil {
		t.Fatal(err)
	}
}
