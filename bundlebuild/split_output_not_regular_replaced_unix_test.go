//go:build unix

package bundlebuild

import (
	"crypto/ed25519"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSplitWhosePartNameIsNotARegularFileIsRefusedAlsoWithForce: the
// threat (docs/SPEC-DECISIONS.md CLI-102): with Force, split renamed its
// staged parts over whatever their names held in the folder and removed
// an index of the same name first. A character device, a FIFO or a
// socket there (a part name linked to /dev/null, an agent's socket) was
// replaced by a regular file, and an empty folder named as the index was
// removed. Now each name is judged first (regfile.JudgeOutput): one that
// is not a regular file is io_error before anything is written, also
// with Force, and the node is left as it was, alone in the folder.
func TestSplitWhosePartNameIsNotARegularFileIsRefusedAlsoWithForce(t *testing.T) {
	k := testKey(1)
	src := t.TempDir()
	path := filepath.Join(src, "b.ampb")
	if err := os.WriteFile(path, build(t, bigDraft(t, "org.example.nodes", 4, 64<<10), k), 0o644); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name, at string
		root     bool
		make     func(t *testing.T, p string)
		want     fs.FileMode
	}{
		{"character device as a part", "b.ampb.part001", true, func(t *testing.T, p string) {
			mustMknod(t, p, syscall.S_IFCHR, unix.Mkdev(1, 3))
		}, fs.ModeDevice | fs.ModeCharDevice},
		{"link to a character device as the index", "b.ampb.parts", true, func(t *testing.T, p string) {
			dev := filepath.Join(filepath.Dir(p), "null")
			mustMknod(t, dev, syscall.S_IFCHR, unix.Mkdev(1, 3))
			if err := os.Symlink(dev, p); err != nil {
				t.Fatal(err)
			}
		}, fs.ModeSymlink},
		{"FIFO as a part", "b.ampb.part002", false, func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, fs.ModeNamedPipe},
		{"socket as a part", "b.ampb.part003", false, func(t *testing.T, p string) {
			l, err := net.Listen("unix", p)
			if err != nil {
				t.Skip("no unix socket here:", err)
			}
			l.(*net.UnixListener).SetUnlinkOnClose(false)
			t.Cleanup(func() { l.Close() })
		}, fs.ModeSocket},
		{"empty folder as the index", "b.ampb.parts", false, func(t *testing.T, p string) {
			if err := os.Mkdir(p, 0o755); err != nil {
				t.Fatal(err)
			}
		}, fs.ModeDir},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			if r.root && os.Geteuid() != 0 {
				t.Skip("making a device node needs root")
			}
			out := t.TempDir()
			node := filepath.Join(out, r.at)
			r.make(t, node)
			before := listNames(t, out)
			_, _, err := SplitFileWith(path, out, bundle.MinPartSize, []ed25519.PrivateKey{k}, SplitOptions{Force: true})
			expectName(t, err, bundle.ErrIO)
			st, lerr := os.Lstat(node)
			if lerr != nil || st.Mode().Type() != r.want {
				t.Fatalf("%s is now %v (%v), want %v left as it was", r.at, st.Mode().Type(), lerr, r.want)
			}
			if after := listNames(t, out); len(after) != len(before) {
				t.Fatalf("the refused split left %v in the folder, which held %v", after, before)
			}
		})
	}
}

func mustMknod(t *testing.T, p string, kind uint32, dev uint64) {
	t.Helper()
	if err := syscall.Mknod(p, kind|0o666, int(dev)); err != nil {
		t.Fatal(err)
	}
}

func listNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}
