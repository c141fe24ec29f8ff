//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestNodeInARegularFilesPlaceIsNeverOpened
//
// Attack (a local user who can write the folder a file is read from): a
// FIFO or a device node, or a link to one, is put where a regular file is
// expected. An open that checks what it opened only afterwards has
// already joined the FIFO or run the device's driver (a watchdog arms, a
// terminal becomes a controlling one). A FIFO with a writer waiting
// stands in for the device (regfiletest.WatchedNode).
//
// Defence: Open and OpenIn examine the name before opening it; a node is
// ErrNotRegular and never opened, a link is ErrNotRegular where links are
// not followed (NoLinks, OpenIn), and a regular file is opened.
func TestNodeInARegularFilesPlaceIsNeverOpened(t *testing.T) {
	nodeInARegularFilesPlaceIsNeverOpened(t, exported)
}

// nodeInARegularFilesPlaceIsNeverOpened is
// TestNodeInARegularFilesPlaceIsNeverOpened through o.
func nodeInARegularFilesPlaceIsNeverOpened(t *testing.T, o openers) {
	for _, tc := range []struct {
		name    string
		viaLink bool
		open    func(dir, name string) (*os.File, error)
	}{
		{"Open FollowLinks, node", false, openPath(o, FollowLinks)},
		{"Open FollowLinks, link to a node", true, openPath(o, FollowLinks)},
		{"Open NoLinks, node", false, openPath(o, NoLinks)},
		{"Open NoLinks, link to a node", true, openPath(o, NoLinks)},
		{"OpenIn, node", false, openBeneath(o)},
		{"OpenIn, link to a node", true, openBeneath(o)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			node := filepath.Join(dir, "file")
			if tc.viaLink {
				node = filepath.Join(dir, "node")
			}
			opened := regfiletest.WatchedNode(t, node)
			if tc.viaLink {
				if err := os.Symlink("node", filepath.Join(dir, "file")); err != nil {
					t.Skipf("no symlink here: %v", err)
				}
			}
			f, err := tc.open(dir, "file")
			if f != nil {
				f.Close()
			}
			if !errors.Is(err, ErrNotRegular) {
				t.Fatalf("a node in a regular file's place: %v, want ErrNotRegular", err)
			}
			if opened() {
				t.Fatal("the node was opened (a device's driver would have run) before it was refused")
			}
		})
	}
}

// TestRegularFileIsOpened: the examination does not refuse a regular
// file, nor one the operator names through a link (FollowLinks), and
// refuses the link itself where links are not followed.
func TestRegularFileIsOpened(t *testing.T) {
	regularFileIsOpened(t, exported)
}

// regularFileIsOpened is TestRegularFileIsOpened through o.
func regularFileIsOpened(t *testing.T, o openers) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "file"), []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("file", filepath.Join(dir, "link")); err != nil {
		t.Skipf("no symlink here: %v", err)
	}
	for _, tc := range []struct {
		name, file string
		open       func(dir, name string) (*os.File, error)
		want       error
	}{
		{"Open FollowLinks", "file", openPath(o, FollowLinks), nil},
		{"Open FollowLinks through a link", "link", openPath(o, FollowLinks), nil},
		{"Open NoLinks", "file", openPath(o, NoLinks), nil},
		{"Open NoLinks of a link", "link", openPath(o, NoLinks), ErrNotRegular},
		{"OpenIn", "file", openBeneath(o), nil},
		{"OpenIn of a link", "link", openBeneath(o), ErrNotRegular},
		{"Open FollowLinks of a folder", ".", openPath(o, FollowLinks), ErrNotRegular},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.open(dir, tc.file)
			if !errors.Is(err, tc.want) || (tc.want != nil && err == nil) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if f == nil {
				return
			}
			defer f.Close()
			buf := make([]byte, 8)
			n, _ := f.Read(buf)
			if string(buf[:n]) != "data" {
				t.Fatalf("read %q", buf[:n])
			}
		})
	}
}

// openers are the openers a test runs: the exported ones, or on Linux
// the same through a /proc of the test's (viaProc).
type openers struct {
	open       func(path string, links Links) (*os.File, fs.FileInfo, error)
	openIn     func(root *os.Root, name string) (*os.File, fs.FileInfo, error)
	openStream func(path string) (*os.File, fs.FileInfo, error)
}

// exported are Open, OpenIn and OpenStream.
var exported = openers{open: Open, openIn: OpenIn, openStream: OpenStream}

func openPath(o openers, links Links) func(dir, name string) (*os.File, error) {
	return func(dir, name string) (*os.File, error) {
		f, _, err := o.open(filepath.Join(dir, name), links)
		return f, err
	}
}

func openBeneath(o openers) func(dir, name string) (*os.File, error) {
	return func(dir, name string) (*os.File, error) {
		root, err := os.OpenRoot(dir)
		if err != nil {
			return nil, err
		}
		defer root.Close()
		f, _, err := o.openIn(root, name)
		return f, err
	}
}
