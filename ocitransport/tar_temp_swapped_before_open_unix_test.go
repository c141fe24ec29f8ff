//go:build unix

package ocitransport

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestTarTempFolderSwappedBeforeTheWriterOpensItIsNotWritten: a tar's
// build folder is made and held (its os.Root); the layout writer then
// opened it again by its name. Another user who may rename in the tar's
// folder (no sticky bit, OCI-25) and swapped the name between the two
// put the writer into a folder of the writer's own (made a layout, and
// another layout's index.json would take the tags pushed), while Close
// emptied only the folder held. The writer must work in the folder held,
// wherever it was moved, and leave the folder put at its name alone
// (OCI-32 amended).
func TestTarTempFolderSwappedBeforeTheWriterOpensItIsNotWritten(t *testing.T) {
	dir := t.TempDir()
	mine, moved := filepath.Join(dir, "mine"), filepath.Join(dir, "moved")
	if err := os.MkdirAll(filepath.Join(mine, "blobs"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "blobs", "precious"), []byte("the writer's own file"), 0o600); err != nil {
		t.Fatal(err)
	}
	var temp string
	o := Options{trace: func(step string) {
		if step != "held:tar-temp" || temp != "" {
			return
		}
		temps, err := filepath.Glob(filepath.Join(dir, ".site.tar.layout-*"))
		if err != nil || len(temps) != 1 {
			t.Errorf("the tar's folder holds %q, want one build folder (%v)", temps, err)
			return
		}
		for _, r := range [][2]string{{temps[0], moved}, {mine, temps[0]}} {
			if err := os.Rename(r[0], r[1]); err != nil {
				t.Error(err)
				return
			}
		}
		temp = temps[0]
	}}
	e, err := Open(context.Background(), Location{Kind: KindLayoutTar, Path: filepath.Join(dir, "site.tar")}, o, ReadWrite)
	if temp == "" {
		t.Fatal("the test never swapped the build folder")
	}
	if err != nil {
		t.Fatalf("open: %v", err)
	}
	untouched := func(when string) {
		t.Helper()
		if _, err := os.Stat(filepath.Join(temp, "blobs", "precious")); err != nil {
			t.Errorf("%s: the writer's folder put at the build folder's name lost its file: %v", when, err)
		}
		if _, err := os.Stat(filepath.Join(temp, "oci-layout")); err == nil {
			t.Errorf("%s: the writer's folder put at the build folder's name was made a layout", when)
		}
	}
	untouched("open")
	if _, err := os.Stat(filepath.Join(moved, "oci-layout")); err != nil {
		t.Errorf("the folder built, moved away, is not the one written: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	untouched("close")
	if left, err := os.ReadDir(moved); err != nil || len(left) != 0 {
		t.Errorf("the folder built, moved away, still holds %d entries after Close (%v)", len(left), err)
	}
}

// TestTarTempFolderSwappedAsItIsMadeIsRefused: between the making of a
// tar's build folder (by name) and its first open, another user who may
// rename in the tar's folder put at its name a link to a folder the
// writer may write (anywhere), or a folder of the writer's: the open
// followed it, made it a layout, and Close emptied it, every file of the
// writer's in it removed. The folder opened must be the one just made
// (not a link, of this user, empty), or the open is refused and
// nothing there is touched (OCI-32 amended).
func TestTarTempFolderSwappedAsItIsMadeIsRefused(t *testing.T) {
	for _, link := range []bool{true, false} {
		name := map[bool]string{true: "a link to a folder elsewhere", false: "a folder of the writer's"}[link]
		t.Run(name, func(t *testing.T) {
			dir, elsewhere := t.TempDir(), t.TempDir()
			victim := filepath.Join(elsewhere, "victim")
			if !link {
				victim = filepath.Join(dir, "mine")
			}
			if err := os.MkdirAll(victim, 0o700); err != nil {
				t.Fatal(err)
			}
			precious := filepath.Join(victim, "precious")
			if err := os.WriteFile(precious, []byte("the writer's own file"), 0o600); err != nil {
				t.Fatal(err)
			}
			swapped := false
			o := Options{trace: func(step string) {
				if step != "made:tar-temp" || swapped {
					return
				}
				temps, err := filepath.Glob(filepath.Join(dir, ".site.tar.layout-*"))
				if err != nil || len(temps) != 1 {
					t.Errorf("the tar's folder holds %q, want one build folder (%v)", temps, err)
					return
				}
				if err := os.Rename(temps[0], filepath.Join(dir, "moved")); err != nil {
					t.Error(err)
					return
				}
				if link {
					err = os.Symlink(victim, temps[0])
				} else {
					err = os.Rename(victim, temps[0])
					precious = filepath.Join(temps[0], "precious")
				}
				if err != nil {
					t.Error(err)
					return
				}
				swapped = true
			}}
			e, err := Open(context.Background(), Location{Kind: KindLayoutTar, Path: filepath.Join(dir, "site.tar")}, o, ReadWrite)
			if !swapped {
				t.Fatal("the test never swapped the build folder")
			}
			if err == nil {
				e.Close()
				t.Error("a tar destination opened what was put at its build folder's name as it was made")
			} else if name := amp.NameOf(err); name != ErrIO {
				t.Errorf("refused %s (%v), want %s", name, err, ErrIO)
			}
			if _, err := os.Stat(precious); err != nil {
				t.Errorf("the writer's file in what was put at the build folder's name is gone: %v", err)
			}
		})
	}
}
