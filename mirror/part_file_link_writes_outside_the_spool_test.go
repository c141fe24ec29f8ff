//go:build unix

package mirror

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestPartFileLinkWritesOutsideTheSpool: a bundle file is downloaded
// into DB.sync/BUNDLE_ID-SHA256.part, opened for writing with links
// followed. Whoever may write the spool folder (one others may write,
// which MIRROR-16 only warns about for the notes, or one below a folder
// another user may write) and can read the mirror's public index puts
// there, under that name, a link to a file of the sync's user (root's
// /etc/cron.d/..., a store): the sync truncates it, or resumes into it,
// and writes the mirror's bytes there. Before MIRROR-18 the target was
// overwritten. Should: a partial file is never opened through a link;
// anything but a regular file in its place is removed and the download
// made in a fresh file; the target is untouched and the bundle imported.
func TestPartFileLinkWritesOutsideTheSpool(t *testing.T) {
	v1 := testBundle(t, 1)
	_, ts := startMirror(t, newStore(t, v1), nil)
	s := agentStore(t)
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.MkdirAll(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	target := filepath.Join(t.TempDir(), "precious")
	orig := []byte("root's file, not the mirror's")
	if err := os.WriteFile(target, orig, 0o600); err != nil {
		t.Fatal(err)
	}
	part := filepath.Join(spool, partName(IndexEntry{BundleID: "org.example.echo", SHA256: sum(v1)}))
	if err := os.Symlink(target, part); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, ts.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(target); !bytes.Equal(got, orig) {
		t.Fatalf("a link in the spool named as a partial file had the sync write %d bytes of the mirror's into the file it points to", len(got))
	}
	if len(rep.Items) != 1 || rep.Items[0].Outcome != OutcomeImported {
		t.Fatalf("%+v", rep.Items)
	}
}
