//go:build unix

package mirror

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPartFileHardLinkWritesOutsideTheSpool: MIRROR-18 keeps a partial
// download from being opened through a symbolic link, but a hard link is
// a regular file: whoever may write the spool folder (one others may
// write, which MIRROR-16 only warns about, or another user's spool that a
// root sync uses, MIRROR-17) and can read the mirror's public index puts
// there, under a listed file's name, a second name of a file of the
// sync's user on the same file system (where the system lets a user link
// another's file: the BSDs and macOS, Linux with fs.protected_hardlinks
// off). The sync resumed into it, or truncated it when it was larger than
// the listed file, and wrote the mirror's bytes there. Should: a spool
// file with another name is never written; it is replaced by a fresh one,
// the target untouched and the bundle imported.
func TestPartFileHardLinkWritesOutsideTheSpool(t *testing.T) {
	v1 := testBundle(t, 1)
	for _, tc := range []struct {
		name string
		orig []byte
	}{
		{"smaller than the listed file: resumed into", []byte("root's file, not the mirror's")},
		{"larger than the listed file: truncated", bytes.Repeat([]byte("root's file "), len(v1))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, ts := startMirror(t, newStore(t, v1), nil)
			s := agentStore(t)
			spool := filepath.Join(filepath.Dir(s.Path()), "sync")
			if err := os.MkdirAll(spool, 0o700); err != nil {
				t.Fatal(err)
			}
			// Beside the spool: one file system, as a hard link needs.
			target := filepath.Join(filepath.Dir(spool), "precious")
			if err := os.WriteFile(target, tc.orig, 0o600); err != nil {
				t.Fatal(err)
			}
			part := filepath.Join(spool, partName(IndexEntry{BundleID: "org.example.echo", SHA256: sum(v1)}))
			if err := os.Link(target, part); err != nil {
				t.Skipf("no hard link here: %v", err)
			}
			rep, err := syncOnce(t, s, ts.URL, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(target); !bytes.Equal(got, tc.orig) {
				t.Fatalf("a hard link in the spool named as a partial file had the sync write into the file it names: %d bytes, were %d", len(got), len(tc.orig))
			}
			if len(rep.Items) != 1 || rep.Items[0].Outcome != OutcomeImported {
				t.Fatalf("%+v", rep.Items)
			}
		})
	}
}

// TestSpoolLockHardLinkToTheStoreKeepsEverySyncOut: MIRROR-21 replaces a
// lock file others may open, judged by its mode and owner; a hard link is
// judged as the file it names. Whoever may write the spool folder puts
// there, as sync.lock, a second name of the store's own database file
// (the sync's user's, mode 0600), which the store holds under its own
// exclusive lock while the sync runs: the sync's lock on it is refused,
// and every sync of the store, revocations included, was refused
// store_in_use on every run. Should: a lock file with another name is no
// sync's; it is replaced and the sync runs; the store's file keeps its
// name and bytes.
func TestSpoolLockHardLinkToTheStoreKeepsEverySyncOut(t *testing.T) {
	v1 := testBundle(t, 1)
	_, ts := startMirror(t, newStore(t, v1), nil)
	s := agentStore(t) // open: its database file is locked by it
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(s.Path(), filepath.Join(spool, spoolLockName)); err != nil {
		t.Skipf("no hard link here: %v", err)
	}
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatalf("a hard link to the store's file as the spool's lock file keeps the sync out: %v", err)
	}
	if len(rep.Items) != 1 || rep.Items[0].Outcome != OutcomeImported {
		t.Fatalf("%+v", rep.Items)
	}
	if _, err := os.Stat(s.Path()); err != nil {
		t.Fatal(err)
	}
}
