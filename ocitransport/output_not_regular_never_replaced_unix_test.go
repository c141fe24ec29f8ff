//go:build unix

package ocitransport_test

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// outputNode is a node put at an output's name.
type outputNode struct {
	kind string
	want fs.FileMode // its type, unchanged after the write
	// make makes it at name in dir and returns the name to give, which
	// may be a link to it.
	make func(t *testing.T, dir, name string) string
}

// mknodAt makes a device node of kind (syscall.S_IFCHR, S_IFBLK) at p,
// as root only (the row is skipped otherwise). Never the real /dev.
func mknodAt(t *testing.T, p string, kind, major, minor uint32) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("making a device node needs root")
	}
	if err := syscall.Mknod(p, kind|0o666, int(unix.Mkdev(major, minor))); err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	charDevice = outputNode{"character device", fs.ModeDevice | fs.ModeCharDevice, func(t *testing.T, dir, name string) string {
		return mknodAt(t, filepath.Join(dir, name), syscall.S_IFCHR, 1, 3)
	}}
	linkToCharDevice = outputNode{"link to a character device", fs.ModeSymlink, func(t *testing.T, dir, name string) string {
		mknodAt(t, filepath.Join(dir, "null"), syscall.S_IFCHR, 1, 3)
		p := filepath.Join(dir, name)
		if err := os.Symlink("null", p); err != nil {
			t.Fatal(err)
		}
		return p
	}}
	fifoNode = outputNode{"FIFO", fs.ModeNamedPipe, func(t *testing.T, dir, name string) string {
		p := filepath.Join(dir, name)
		if err := syscall.Mkfifo(p, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}}
	folderNode = outputNode{"folder", fs.ModeDir, func(t *testing.T, dir, name string) string {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o700); err != nil {
			t.Fatal(err)
		}
		return p
	}}
	socketNode = outputNode{"socket", fs.ModeSocket, func(t *testing.T, dir, name string) string {
		p := filepath.Join(dir, name)
		l, err := net.Listen("unix", p)
		if err != nil {
			t.Skip("no unix socket here:", err)
		}
		l.(*net.UnixListener).SetUnlinkOnClose(false)
		t.Cleanup(func() { l.Close() })
		return p
	}}
	// devNull is the literal name /dev/null, made by no test: only
	// judged, never opened (docs/SPEC-DECISIONS.md CLI-105).
	devNull = outputNode{"/dev/null", fs.ModeDevice | fs.ModeCharDevice, func(t *testing.T, _, _ string) string {
		if st, err := os.Lstat("/dev/null"); err != nil || st.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
			t.Skip("no /dev/null character device here")
		}
		return "/dev/null"
	}}
	blockDevice = outputNode{"block device", fs.ModeDevice, func(t *testing.T, dir, name string) string {
		return mknodAt(t, filepath.Join(dir, name), syscall.S_IFBLK, 7, 250)
	}}
)

// entriesOf lists dir's names, sorted.
func entriesOf(t *testing.T, dir string) string {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return strings.Join(names, ",")
}

// sameNode fails t unless path is still of type want.
func sameNode(t *testing.T, what, path string, want fs.FileMode) {
	t.Helper()
	if st, err := os.Lstat(path); err != nil || st.Mode().Type() != want {
		t.Fatalf("%s: the node is now %v (%v), want %v", what, st.Mode().Type(), err, want)
	}
}

// TestPullFileIntoADeviceOrFIFOWritesIntoItAndRefusesOtherNodes: the
// threat (docs/SPEC-DECISIONS.md OCI-44): PullFile wrote a temporary
// file next to path and renamed it over whatever path held: a
// character device (as root, /dev/null) became a regular file, a FIFO's
// reader got nothing and the FIFO was gone, a socket was replaced.
// OCI-44 then wrote into character devices and FIFOs; since CLI-105
// PullFile refuses every name that is no regular file or nothing (but
// one of the process's own descriptors): a character device, a link to
// one, a FIFO (with a reader or not), a folder, a socket, a block device
// and the literal /dev/null (which the CLI discards itself) are
// io_error, before anything is written or opened, and stay as they were
// (a FIFO's reader gets nothing). The device nodes are made in the
// test's folder (root only).
func TestPullFileIntoADeviceOrFIFOWritesIntoItAndRefusesOtherNodes(t *testing.T) {
	src := mustOpen(t, "oci-layout:"+filepath.Join(t.TempDir(), "layout"), ocitransport.Options{}, ocitransport.ReadWrite)
	a := pushSample(t, src, "v1")
	want, err := os.ReadFile(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		node   outputNode
		reader bool   // a reader on the FIFO
		err    string // "" where it is written into
	}{
		{charDevice, false, "io_error"},
		{linkToCharDevice, false, "io_error"},
		{fifoNode, true, "io_error"},
		{devNull, false, "io_error"},
		{fifoNode, false, "io_error"},
		{folderNode, false, "io_error"},
		{socketNode, false, "io_error"},
		{blockDevice, false, "io_error"},
	}
	for _, r := range rows {
		label := r.node.kind
		if r.node.want == fs.ModeNamedPipe && r.reader {
			label += " with a reader"
		} else if r.node.want == fs.ModeNamedPipe {
			label += " without a reader"
		}
		t.Run(label, func(t *testing.T) {
			tmp, dir := t.TempDir(), t.TempDir()
			t.Setenv("TMPDIR", tmp)
			out := r.node.make(t, dir, "out.ampb")
			before := entriesOf(t, dir)
			got := make(chan []byte, 1)
			if r.reader {
				rd, err := os.OpenFile(out, os.O_RDONLY|syscall.O_NONBLOCK, 0)
				if err != nil {
					t.Fatal(err)
				}
				defer rd.Close()
				keep, err := os.OpenFile(out, os.O_WRONLY, 0) // no end of file before the pull is done
				if err != nil {
					t.Fatal(err)
				}
				go func() {
					b, _ := io.ReadAll(rd)
					got <- b
				}()
				defer func() {
					keep.Close()
					if r.err != "" {
						want = nil
					}
					if b := <-got; !bytes.Equal(b, want) {
						t.Errorf("the FIFO's reader got %d bytes, want %d", len(b), len(want))
					}
				}()
			}
			err := src.PullFile(context.Background(), a, out)
			if name := nameOf(err); name != r.err {
				t.Fatalf("PullFile to a %s: %q (%v), want %q", r.node.kind, name, err, r.err)
			}
			sameNode(t, "PullFile to a "+r.node.kind, out, r.node.want)
			if after := entriesOf(t, dir); after != before {
				t.Fatalf("the folder now holds %s, want %s", after, before)
			}
			if left := entriesOf(t, tmp); left != "" {
				t.Fatalf("the temporary folder still holds %s", left)
			}
		})
	}
}

// TestTarDestinationWhoseNameIsNoRegularFileIsRefusedBeforeAnythingIsMade:
// a tar destination whose name is a device, a FIFO, a folder or a
// socket was refused only as the old tar was read (oci_layout_error),
// after the folder's leftovers were swept and a build folder was made
// beside it. A tar cannot be read back from a device or a pipe, and
// reading one to keep its bundles would run its driver or take a
// reader's bytes, so every such name is io_error, before anything is
// removed or made (docs/SPEC-DECISIONS.md OCI-45).
func TestTarDestinationWhoseNameIsNoRegularFileIsRefusedBeforeAnythingIsMade(t *testing.T) {
	for _, n := range []outputNode{charDevice, linkToCharDevice, fifoNode, folderNode, socketNode, blockDevice} {
		t.Run(n.kind, func(t *testing.T) {
			dir := t.TempDir()
			out := n.make(t, dir, "site.tar")
			before := entriesOf(t, dir)
			l, err := ocitransport.ParseLocation("oci-layout:" + out)
			if err != nil {
				t.Fatal(err)
			}
			ep, err := ocitransport.Open(context.Background(), l, ocitransport.Options{}, ocitransport.ReadWrite)
			if err == nil {
				ep.Close()
			}
			if name := nameOf(err); name != "io_error" {
				t.Fatalf("a tar at a %s: %q (%v), want io_error", n.kind, name, err)
			}
			sameNode(t, "a tar at a "+n.kind, out, n.want)
			if after := entriesOf(t, dir); after != before {
				t.Fatalf("the folder now holds %s, want %s", after, before)
			}
		})
	}
}

// TestTarCommitNeverRenamesOverANodePutAtItsNameMeanwhile: a tar's
// Commit renamed the tar it built over whatever its name held by then:
// a device, a FIFO or a socket put there while the copy ran (minutes on
// a slow link) was replaced by a regular file. renameSynced, which
// PullFile shares, now judges the name just before the rename: anything
// but nothing or a regular file is io_error, the node stays, and the
// tar built is removed (docs/SPEC-DECISIONS.md OCI-45).
func TestTarCommitNeverRenamesOverANodePutAtItsNameMeanwhile(t *testing.T) {
	for _, n := range []outputNode{charDevice, linkToCharDevice, fifoNode, socketNode} {
		t.Run(n.kind, func(t *testing.T) {
			dir := t.TempDir()
			tarPath := filepath.Join(dir, "site.tar")
			ep := mustOpen(t, "oci-layout:"+tarPath, ocitransport.Options{}, ocitransport.ReadWrite)
			pushSample(t, ep, "v1")
			n.make(t, dir, "site.tar")
			err := ep.Commit()
			ep.Close()
			if name := nameOf(err); name != "io_error" {
				t.Fatalf("Commit over a %s: %q (%v), want io_error", n.kind, name, err)
			}
			sameNode(t, "Commit over a "+n.kind, tarPath, n.want)
			// The build folder is gone with Close: the node (and what a
			// link names) alone is left, no copy of the tar beside it.
			want := "site.tar"
			if n.want == fs.ModeSymlink {
				want = "null,site.tar"
			}
			if after := entriesOf(t, dir); after != want {
				t.Fatalf("the folder now holds %s, want %s", after, want)
			}
		})
	}
}
