//go:build unix

package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestServeSpoolIsNotMadeBelowAFolderOthersMayWrite: ServeSpool made a
// missing base (and every folder above it) with MkdirAll before judging
// it (MIRROR-35 as first landed): a serve of a store in a folder others
// may write created DB.mirror there, and then refused it. Should: the
// folder the base goes in, and those above, are judged first; a missing
// base below a folder others may write (or one whose folder is missing)
// is refused and nothing is made; in a folder of this user's the base is
// made, 0700 (the guard).
func TestServeSpoolIsNotMadeBelowAFolderOthersMayWrite(t *testing.T) {
	for _, c := range []struct {
		name    string
		mode    os.FileMode // of the folder the base goes in
		refused bool
	}{
		{"in a folder others may write", 0o777, true},
		{"in a folder the group may write", 0o770, true},
		{"in a folder of this user's alone (guard)", 0o700, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			folder := filepath.Join(t.TempDir(), "stores")
			mustNil(t, os.Mkdir(folder, 0o700))
			mustNil(t, os.Chmod(folder, c.mode))
			base := filepath.Join(folder, "store.db.mirror")
			dir, release, err := ServeSpool(base)
			if err == nil {
				release()
			}
			var refusal *SpoolBaseError
			if got := errors.As(err, &refusal); got != c.refused {
				t.Fatalf("ServeSpool(%s) = %q, %v; refused %v, want %v", base, dir, err, got, c.refused)
			}
			_, serr := os.Lstat(base)
			if made := serr == nil; made == c.refused {
				t.Fatalf("the base was made: %v, after a refusal %v", made, c.refused)
			}
		})
	}
	t.Run("in a folder that is missing", func(t *testing.T) {
		base := filepath.Join(t.TempDir(), "gone", "store.db.mirror")
		if _, _, err := ServeSpool(base); err == nil {
			t.Fatal("a base whose folder is missing was made")
		}
		if _, err := os.Lstat(filepath.Dir(base)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the missing folder above the base was made: %v", err)
		}
	})
}
