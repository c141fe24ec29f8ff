package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestServeSpoolExportTempFilesLeftByACrashStayForever: the mirror
// exports each bundle file into its spool folder through a temporary
// file (.export-*.tmp) renamed into place once whole; a mirror killed
// during an export (a restart, the OOM killer, a reboot) leaves that file,
// up to the bundle size limit (1 GiB by default), and nothing ever removed
// it: prune removes only *.bundle. A mirror restarted now and then over
// years, with --spool, fills the spool's disk. Should: a snapshot stored
// removes such files, as it removes bundle files it does not serve (no
// export of the server runs meanwhile: both happen under its refresh).
func TestServeSpoolExportTempFilesLeftByACrashStayForever(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(spool, ".export-1234567.tmp")
	if err := os.WriteFile(left, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	// Not the server's: left alone.
	other := filepath.Join(spool, "notes.txt")
	if err := os.WriteFile(other, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	m, _ := startMirror(t, newStore(t, testBundle(t, 1)), func(o *Options) { o.SpoolDir = spool })
	if _, err := os.Lstat(left); err == nil {
		t.Fatalf("%s, a temporary export a killed mirror left, is still in the spool folder after a snapshot was stored", filepath.Base(left))
	}
	if _, err := os.Lstat(other); err != nil {
		t.Fatalf("a file not the server's was removed from its spool folder: %v", err)
	}
	if n := len(globSpool(t, m)); n != 1 {
		t.Fatalf("%d bundle files in the spool, want 1", n)
	}
}

// TestExportTempsAreRemovedAtStartEvenWhenNoSnapshotIsStored: prune
// runs only once a snapshot is stored, and a store past an index cap
// never stores one (MIRROR-31 refuses each refresh at once), so a
// mirror killed during an export and restarted over such a store kept
// the temporary file (a read of MIRROR-30). New now removes them before
// its first refresh: here that refresh fails, New returns its error, and
// the file is gone.
func TestExportTempsAreRemovedAtStartEvenWhenNoSnapshotIsStored(t *testing.T) {
	spool := filepath.Join(t.TempDir(), "spool")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	left := filepath.Join(spool, ".export-7654321.tmp")
	if err := os.WriteFile(left, make([]byte, 1<<20), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(Options{SpoolDir: spool, Open: func() (Source, error) { return nil, errors.New("the store cannot be read") }})
	if err == nil {
		t.Fatal("New started over a store it cannot read: not a witness")
	}
	if _, err := os.Lstat(left); err == nil {
		t.Fatalf("%s, a temporary export a killed mirror left, stays while no snapshot can be stored", filepath.Base(left))
	}
}
