//go:build unix

package bundlebuild

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSourceFolderThatCannotBeListedIsNotEchoedRaw: the attack: whoever
// can write in the source folder names a folder with terminal control
// bytes, a newline or a bidi override and makes it one the walk cannot
// list: nested past the system's path limit (as here, which needs no
// privilege to refuse), or left unreadable (mode 0). The walk refused
// it, io_error "cannot read the source folder", but the cause was the
// operating system's error, which repeats the whole path raw: the
// folder's name reached the terminal or log of any embedder or CI job
// that prints err.Error() (BUILD-6 left it open). Expected: the folder
// is named as every source error names a file (shownName: quoted,
// escaped, bounded), and the cause still says why (errors.Is).
func TestSourceFolderThatCannotBeListedIsNotEchoedRaw(t *testing.T) {
	dir := copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	// Each level is a name of 200 bytes holding an escape sequence, a
	// newline and a bidi override: 24 levels are far past PATH_MAX
	// (4,096 bytes on Linux), so the walk's open of the deepest fails.
	level := "a\x1b]0;pwned\a\nok: wrote bundle\u202e" + strings.Repeat("x", 150)
	root, err := os.OpenRoot(filepath.Join(dir, "schemas"))
	if err != nil {
		t.Fatal(err)
	}
	made := 0
	for i := 0; i < 24; i++ {
		if err := root.Mkdir(level, 0o755); err != nil {
			root.Close()
			t.Skipf("the file system refuses the name at level %d: %v", i, err)
		}
		next, err := root.OpenRoot(level)
		root.Close()
		if err != nil {
			t.Skipf("cannot open level %d: %v", i, err)
		}
		root, made = next, i+1
	}
	root.Close()
	t.Cleanup(func() { removeDeep(t, filepath.Join(dir, "schemas"), level, made) })

	_, err = LoadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0)})
	if err == nil {
		t.Fatal("a source with a folder past the path limit was built")
	}
	if !errors.Is(err, bundle.ErrIO) {
		t.Fatalf("got %v, want io_error", err)
	}
	msg := err.Error()
	for _, r := range msg {
		if unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) {
			t.Fatalf("the error echoes the raw folder name, control or bidi rune %U included: %q", r, msg)
		}
	}
	if len(msg) > 600 {
		t.Fatalf("the error is %d bytes long: the folder's path is not bounded: %q", len(msg), msg)
	}
	if !strings.Contains(msg, "cannot read the source folder") || !errors.Is(err, syscall.ENAMETOOLONG) {
		t.Fatalf("the error does not say what failed, or lost its cause: %q", msg)
	}
	t.Log(msg)
}

// removeDeep removes a chain of n folders named level below dir, deepest
// first, through os.Root (the chain is longer than a path may be, so
// os.RemoveAll of dir cannot reach it).
func removeDeep(t *testing.T, dir, level string, n int) {
	roots := make([]*os.Root, 0, n+1)
	r, err := os.OpenRoot(dir)
	if err != nil {
		return
	}
	roots = append(roots, r)
	for i := 0; i < n-1; i++ {
		next, err := roots[len(roots)-1].OpenRoot(level)
		if err != nil {
			break
		}
		roots = append(roots, next)
	}
	for i := len(roots) - 1; i >= 0; i-- {
		if err := roots[i].Remove(level); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Logf("cannot remove level %d: %v", i, err)
		}
		roots[i].Close()
	}
}
