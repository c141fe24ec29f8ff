//go:build (unix || windows) && !aix && (!solaris || illumos)

package mirror

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServeSpoolSweepsOnlyTheNamesItMakes: the sweep of MIRROR-34 took
// every entry of DB.mirror whose name began with "run-" for a mirror's,
// and removed it (os.RemoveAll) when no "NAME.lock" was held: an
// operator's run-notes.txt, or a run-2025-backup/ folder with what it
// holds, was removed at the next start. Should: only run-N folders and
// run-N.lock files (N digits, the names ServeSpool makes) are judged; a
// killed mirror's run-7 still goes with its lock.
func TestServeSpoolSweepsOnlyTheNamesItMakes(t *testing.T) {
	base := filepath.Join(t.TempDir(), "store.db.mirror")
	mustNil(t, os.Mkdir(base, 0o700))
	notes := filepath.Join(base, "run-notes.txt")
	mustNil(t, os.WriteFile(notes, []byte("keep"), 0o600))
	backup := filepath.Join(base, "run-2025-backup")
	mustNil(t, os.Mkdir(backup, 0o700))
	mustNil(t, os.WriteFile(filepath.Join(backup, "ab.bundle"), []byte("keep"), 0o600))
	odd := filepath.Join(base, "run-x.lock")
	mustNil(t, os.WriteFile(odd, nil, 0o600))
	killed := filepath.Join(base, "run-7")
	mustNil(t, os.Mkdir(killed, 0o700))
	mustNil(t, os.WriteFile(killed+".lock", nil, 0o600))

	dir, release, err := ServeSpool(base)
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	for _, c := range []struct {
		path  string
		stays bool
	}{
		{notes, true}, {backup, true}, {filepath.Join(backup, "ab.bundle"), true}, {odd, true},
		{killed, false}, {killed + ".lock", false}, {dir, true},
	} {
		if _, err := os.Lstat(c.path); (err == nil) != c.stays {
			t.Errorf("%s: there %v, want %v", c.path, err == nil, c.stays)
		}
	}
}
