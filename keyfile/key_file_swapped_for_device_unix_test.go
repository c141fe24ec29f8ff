//go:build unix

package keyfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/internal/regfile/regfiletest"
)

// TestKeyFileSwappedForADeviceIsNotOpened
//
// Attack (a local user who can write the folder a key or passphrase file
// is read from): the file is replaced by a device node, or by a link to
// one. OpenRegular opened the path without waiting and judged it (fstat)
// only once open (CLI-29), and open(2) of a device runs its driver
// first: /dev/watchdog armed, a terminal taken as the controlling one.
// A FIFO with a writer waiting stands in for that device
// (regfiletest.WatchedNode). Before: the node was opened, then refused.
//
// Defence (docs/SPEC-DECISIONS.md CLI-29, amended): what the path leads to
// is examined before it is opened (internal/regfile); anything but a
// regular file is key_unreadable, never opened. A key the operator names
// through a link of their own is still read.
func TestKeyFileSwappedForADeviceIsNotOpened(t *testing.T) {
	for _, viaLink := range []bool{false, true} {
		name := "node in its place"
		if viaLink {
			name = "symlink to a node elsewhere"
		}
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "key.pem")
			node := path
			if viaLink {
				node = filepath.Join(t.TempDir(), "device")
			}
			opened := regfiletest.WatchedNode(t, node)
			if viaLink {
				if err := os.Symlink(node, path); err != nil {
					t.Skipf("no symlink here: %v", err)
				}
			}
			for _, read := range []func(string) error{
				func(p string) error { _, err := ReadPrivate(p); return err },
				func(p string) error { _, err := ParsePublic(p); return err },
				func(p string) error { _, err := ReadKeyFile(p); return err },
				func(p string) error { f, _, err := OpenRegular(p, "passphrase file"); closeIf(f); return err },
			} {
				if err := read(path); errName(err) != ErrKeyUnreadable {
					t.Fatalf("a node as key file: %v, want %s", err, ErrKeyUnreadable)
				}
			}
			if opened() {
				t.Fatal("the node in the key file's place was opened (a device's driver would have run) before it was refused")
			}
		})
	}
}

// TestKeyFileThroughOperatorsLinkIsRead: examining before opening does not
// refuse a key file the operator names through a link of their own.
func TestKeyFileThroughOperatorsLinkIsRead(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real.key")
	if err := os.WriteFile(real, []byte("not a key, but a regular file"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.key")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("no symlink here: %v", err)
	}
	data, err := ReadKeyFile(link)
	if err != nil || string(data) != "not a key, but a regular file" {
		t.Fatalf("ReadKeyFile through the operator's link: %q, %v", data, err)
	}
}

func closeIf(f *os.File) {
	if f != nil {
		f.Close()
	}
}
