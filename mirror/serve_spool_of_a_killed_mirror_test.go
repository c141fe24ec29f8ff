//go:build (unix || windows) && !aix && (!solaris || illumos)

package mirror

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServeSpoolOfAKilledMirrorIsRemovedAtTheNextStart: the folders
// ServeSpool makes for 'ampbundle serve' (MIRROR-34) are removed by the
// next start once their mirror has ended, killed or not, and only then:
// a folder whose lock no one holds, or with no lock left, goes with its
// bundle copies; the folder of a mirror still running (its lock held),
// and any name ServeSpool does not make, stay; a mirror's release removes
// its own folder and lock.
func TestServeSpoolOfAKilledMirrorIsRemovedAtTheNextStart(t *testing.T) {
	base := filepath.Join(t.TempDir(), "store.db.mirror")
	live, releaseLive, err := ServeSpool(base)
	if err != nil {
		t.Fatal(err)
	}
	defer releaseLive()
	plant := func(name string, lock bool) string {
		dir := filepath.Join(base, name)
		mustNil(t, os.Mkdir(dir, 0o700))
		mustNil(t, os.WriteFile(filepath.Join(dir, "ab.bundle"), []byte("a copy"), 0o600))
		if lock {
			mustNil(t, os.WriteFile(dir+".lock", nil, 0o600))
		}
		return dir
	}
	killed, removing := plant("run-1", true), plant("run-2", false)
	other := filepath.Join(base, "operator-notes")
	mustNil(t, os.WriteFile(other, []byte("keep"), 0o600))

	dir, release, err := ServeSpool(base)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path  string
		stays bool
	}{
		{killed, false}, {killed + ".lock", false}, {removing, false},
		{live, true}, {live + ".lock", true}, {other, true}, {dir, true},
	} {
		if _, err := os.Lstat(c.path); (err == nil) != c.stays {
			t.Errorf("%s: there %v, want %v", c.path, err == nil, c.stays)
		}
	}
	release()
	for _, p := range []string{dir, dir + ".lock"} {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s is still there after its release", p)
		}
	}
}
