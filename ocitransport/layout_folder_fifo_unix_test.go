//go:build unix

package ocitransport

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestFolderSwappedForAFIFOIsNeverWaitedOn: the attack. The layout's
// folders are held as os.Roots on every system (docs/SPEC-DECISIONS.md
// OCI-26), but os.Root's OpenRoot and Open of a name open whatever is
// there, and a FIFO's open waits for a writer forever (why OCI-21 had
// refused os.Root alone): another user of a shared layout folder who put
// a FIFO, or a link to one, where blobs, blobs/sha256, the layout's root
// or a tar's temporary folder was just examined a folder had the writer
// or reader wait forever. Every folder is now opened as "NAME/."
// (folderOnly, folderOnlyPath), which resolves only to a folder: the
// FIFO is refused at once, never opened.
func TestFolderSwappedForAFIFOIsNeverWaitedOn(t *testing.T) {
	dir := t.TempDir()
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Symlink("fifo", filepath.Join(dir, "link")); err != nil {
		t.Skipf("no symlink here: %v", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	opens := map[string]func() error{
		"the layout's root": func() error {
			r, err := os.OpenRoot(folderOnlyPath(filepath.Join(dir, "fifo")))
			if err == nil {
				r.Close()
			}
			return err
		},
	}
	for _, name := range []string{"fifo", "link"} {
		opens["a folder below the root, "+name] = func() error {
			r, err := root.OpenRoot(folderOnly(name))
			if err == nil {
				r.Close()
			}
			return err
		}
		opens["a folder listed below the root, "+name] = func() error {
			f, err := root.Open(folderOnly(name))
			if err == nil {
				f.Close()
			}
			return err
		}
	}
	for what, open := range opens {
		t.Run(what, func(t *testing.T) {
			done := make(chan error, 1)
			go func() { done <- open() }()
			select {
			case err := <-done:
				if err == nil {
					t.Errorf("%s: a FIFO was opened as a folder", what)
				}
			case <-time.After(5 * time.Second):
				// Let the open end: a writer comes.
				if w, err := os.OpenFile(filepath.Join(dir, "fifo"), os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				t.Errorf("%s: the open of a FIFO put where a folder was waited for a writer", what)
			}
		})
	}
}
