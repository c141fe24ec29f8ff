//go:build unix

package regfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestOutputJudgedByWhatItsNameLeadsTo: the one output rule
// (docs/SPEC-DECISIONS.md CLI-105, amending CLI-100). An output's name is
// judged through its links: nothing there, a regular file or a link to
// one is written beside and renamed (OutputFile); the literal /dev/null
// is OutputDiscard (nothing opened); a character device, a FIFO (or a
// link to one), a folder, a socket or a block device is ErrNotRegular,
// never opened for writing nor replaced. Before CLI-105 a FIFO and a
// character device were OutputStream and opened by name for writing.
func TestOutputJudgedByWhatItsNameLeadsTo(t *testing.T) {
	dir := t.TempDir()
	mk := func(name string, f func(p string) error) string {
		p := filepath.Join(dir, name)
		if err := f(p); err != nil {
			t.Fatal(name, err)
		}
		return p
	}
	file := mk("file", func(p string) error { return os.WriteFile(p, []byte("x"), 0o600) })
	fifo := mk("fifo", func(p string) error { return syscall.Mkfifo(p, 0o600) })
	rows := []struct {
		name string
		path string
		want Output
		err  error
		root bool
	}{
		{"nothing there", filepath.Join(dir, "none"), OutputFile, nil, false},
		{"regular file", file, OutputFile, nil, false},
		{"link to a regular file", mk("lfile", func(p string) error { return os.Symlink(file, p) }), OutputFile, nil, false},
		{"dangling link", mk("ldangling", func(p string) error { return os.Symlink("none", p) }), OutputFile, nil, false},
		{"FIFO", fifo, OutputFile, ErrNotRegular, false},
		{"link to a FIFO", mk("lfifo", func(p string) error { return os.Symlink(fifo, p) }), OutputFile, ErrNotRegular, false},
		{"/dev/null, literally", "/dev/null", OutputDiscard, nil, false},
		{"/dev/null, not clean", "/dev//./null", OutputDiscard, nil, false},
		{"a link to /dev/null", mk("lnull", func(p string) error { return os.Symlink("/dev/null", p) }), OutputFile, ErrNotRegular, false},
		{"folder", mk("dir", func(p string) error { return os.Mkdir(p, 0o700) }), OutputFile, ErrNotRegular, false},
		{"socket", mk("sock", func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				l.(*net.UnixListener).SetUnlinkOnClose(false)
				t.Cleanup(func() { l.Close() })
			}
			return err
		}), OutputFile, ErrNotRegular, false},
		{"character device", "chr", OutputFile, ErrNotRegular, true},
		{"link to a character device", "lchr", OutputFile, ErrNotRegular, true},
		{"block device", "blk", OutputFile, ErrNotRegular, true},
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			p := r.path
			if r.root {
				if os.Geteuid() != 0 {
					t.Skip("making a device node needs root")
				}
				kind := uint32(syscall.S_IFCHR)
				if r.path == "blk" {
					kind = syscall.S_IFBLK
				}
				name := r.path
				if r.path == "lchr" {
					name = "chr2"
				}
				p = mk(name, func(p string) error { return syscall.Mknod(p, kind|0o666, int(unix.Mkdev(1, 3))) })
				if r.path == "lchr" {
					p = mk(r.path, func(l string) error { return os.Symlink(p, l) })
				}
			}
			got, err := JudgeOutput(p)
			if !errors.Is(err, r.err) || (err == nil && got != r.want) {
				t.Fatalf("JudgeOutput: %v, %v; want %v, %v", got, err, r.want, r.err)
			}
		})
	}
}

// TestOutputStreamOpensNothingByName: OpenOutputStream writes only
// through a duplicate of one of this process's own descriptors
// (docs/SPEC-DECISIONS.md CLI-105): a FIFO, even one with a holder that
// never reads, and a regular file are ErrNotStream at once, never opened
// (before, the FIFO was opened by name for writing, and a holder that
// never read hung the writer).
func TestOutputStreamOpensNothingByName(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// A holder that opens it for reading and never reads.
	holder, err := os.OpenFile(fifo, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{fifo, file, "/dev/null"} {
		done := make(chan error, 1)
		go func() {
			f, err := OpenOutputStream(p)
			if f != nil {
				f.Close()
			}
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotStream) {
				t.Errorf("%s: %v, want ErrNotStream", p, err)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: OpenOutputStream still waits after 10 s", p)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Fatalf("the file now holds %q", b)
	}
	if st, err := os.Lstat("/dev/null"); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Fatalf("/dev/null is no longer a character device: %v, %v", st, err)
	}
}
