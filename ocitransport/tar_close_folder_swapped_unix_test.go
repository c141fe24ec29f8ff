//go:build unix

package ocitransport_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestTarCloseRemovesTheFolderItBuiltNeverOnePutAtItsName: a layout tar
// is built in a folder next to it (".NAME.layout-DIGITS", OCI-25), which
// Close (and so Commit, and every failed Open) removed by its path
// (os.RemoveAll). In a tar's folder others may write (no sticky bit:
// OCI-25's threat), another user can rename the writer's folder away and
// rename a folder of the writer's there (a rename within one folder needs
// no right on the folder moved) to its name: Close then removed that
// folder, with everything in it, with the writer's rights, and left the
// one built, up to the layout's size, under a name no cleaner takes.
// Close must empty the very folder it built, wherever it was moved, and
// remove its name only while the name is that folder
// (docs/SPEC-DECISIONS.md OCI-32).
func TestTarCloseRemovesTheFolderItBuiltNeverOnePutAtItsName(t *testing.T) {
	for _, tc := range []struct {
		name   string
		commit bool // Close through Commit
		swap   bool
	}{
		{"Close, the folder swapped", false, true},
		{"Commit, the folder swapped", true, true},
		{"Close, untouched", false, false},
		{"Commit, untouched", true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			ep := mustOpen(t, "oci-layout:"+filepath.Join(dir, "site.tar"), ocitransport.Options{}, ocitransport.ReadWrite)
			pushSample(t, ep, "v1")
			temps, err := filepath.Glob(filepath.Join(dir, ".site.tar.layout-*"))
			if err != nil || len(temps) != 1 {
				t.Fatalf("the tar's folder holds %q, want one .site.tar.layout-* folder (%v)", temps, err)
			}
			moved, precious := filepath.Join(dir, "moved"), filepath.Join(temps[0], "blobs", "precious")
			if tc.swap {
				// The other user: the writer's folder renamed away, another
				// folder of the writer's renamed to its name.
				mine := filepath.Join(dir, "mine")
				if err := os.MkdirAll(filepath.Join(mine, "blobs"), 0o700); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(mine, "blobs", "precious"), []byte("the writer's own file"), 0o600); err != nil {
					t.Fatal(err)
				}
				for _, r := range [][2]string{{temps[0], moved}, {mine, temps[0]}} {
					if err := os.Rename(r[0], r[1]); err != nil {
						t.Fatal(err)
					}
				}
			}
			if tc.commit {
				err = ep.Commit()
			} else {
				err = ep.Close()
			}
			if err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			if !tc.swap {
				if _, err := os.Lstat(temps[0]); !os.IsNotExist(err) {
					t.Errorf("%s: the folder built is left at its name (%v)", tc.name, err)
				}
				return
			}
			if _, err := os.Stat(precious); err != nil {
				t.Errorf("%s: the folder of the writer's put at the build folder's name was removed with the writer's rights: %v", tc.name, err)
			}
			if left, err := os.ReadDir(moved); err != nil || len(left) != 0 {
				t.Errorf("%s: the folder built, moved away, still holds %d entries (%v): left for ever, up to the layout's size", tc.name, len(left), err)
			}
		})
	}
}
