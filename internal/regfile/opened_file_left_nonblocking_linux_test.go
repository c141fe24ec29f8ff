//go:build linux

package regfile

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpenedFileIsBlockingAndNamedAsExamined
//
// Attack (any reader of what Open returns; a hostile medium): the regular
// file Open returned on Linux before review 85 was opened through
// /proc/self/fd/N with O_NONBLOCK, and kept both. O_NONBLOCK stays set on the open file
// description, shared with every dup and child it is handed to (a read of
// a file on a FUSE or network medium may then fail with EAGAIN, which Go
// does not retry for a file outside its poller); and the file is named
// "/proc/self/fd/N", so every later error (a read's EIO, a permission
// refused at the reopen) names a descriptor number instead of the file.
// Defence (BUNDLE-20): O_NONBLOCK only while opening (a lease is not
// waited for), cleared on the regular file returned; the file named as
// the path examined.
func TestOpenedFileIsBlockingAndNamedAsExamined(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("data"), 0o600); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, tc := range []struct {
		name string
		open func() (*os.File, error)
	}{
		{"Open", func() (*os.File, error) { f, _, err := Open(file, NoLinks); return f, err }},
		{"OpenIn", func() (*os.File, error) { f, _, err := OpenIn(root, "file"); return f, err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := tc.open()
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if f.Name() != file {
				t.Errorf("the file opened is named %q, want %q", f.Name(), file)
			}
			rc, err := f.SyscallConn()
			if err != nil {
				t.Fatal(err)
			}
			var fl int
			rc.Control(func(fd uintptr) { fl, _ = unix.FcntlInt(fd, unix.F_GETFL, 0) })
			if fl&unix.O_NONBLOCK != 0 {
				t.Error("O_NONBLOCK is left set on the regular file returned")
			}
		})
	}
}
