//go:build unix

package regfile

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestOpenStreamOpensAFileOrAPipeAndNeverADevice: OpenStream, the opener
// of one-shot inputs (CLI-57), reads a regular file, a FIFO (waiting for
// its writer) and a shell's pipe (/dev/fd/N), and refuses a device or a
// link to one (ErrNotRegular) without opening it.
func TestOpenStreamOpensAFileOrAPipeAndNeverADevice(t *testing.T) {
	openStreamOpensAFileOrAPipeAndNeverADevice(t, exported)
}

// openStreamOpensAFileOrAPipeAndNeverADevice is
// TestOpenStreamOpensAFileOrAPipeAndNeverADevice through o.
func openStreamOpensAFileOrAPipeAndNeverADevice(t *testing.T, o openers) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	go func() {
		if w, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			w.WriteString("x")
			w.Close()
		}
	}()
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pr.Close()
	pw.WriteString("x")
	pw.Close()
	devLink := filepath.Join(dir, "dev")
	if err := os.Symlink(os.DevNull, devLink); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, path string
		ok         bool
	}{
		{"regular file", file, true},
		{"FIFO", fifo, true},
		{"shell's pipe", "/dev/fd/" + strconv.Itoa(int(pr.Fd())), true},
		{"device", os.DevNull, false},
		{"link to a device", devLink, false},
		{"folder", dir, false},
	} {
		f, _, err := o.openStream(tc.path)
		if !tc.ok {
			if f != nil {
				f.Close()
			}
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, want ErrNotRegular", tc.name, err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		b, err := io.ReadAll(f)
		f.Close()
		if err != nil || string(b) != "x" {
			t.Errorf("%s: read %q, %v", tc.name, b, err)
		}
	}
}
