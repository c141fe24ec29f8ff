//go:build unix

package regfile

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOutputJudgedByWhatItsNameLeadsTo: the one output rule
// (docs/SPEC-DECISIONS.md CLI-100, CLI-101). An output's name is judged
// through its links: nothing there, a regular file or a link to one is
// written beside and renamed (OutputFile); a character device or a FIFO,
// or a link to one (/dev/stdout), is written into (OutputStream); a
// folder, a socket or a block device is ErrNotRegular, never replaced.
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
		{"FIFO", fifo, OutputStream, nil, false},
		{"link to a FIFO", mk("lfifo", func(p string) error { return os.Symlink(fifo, p) }), OutputStream, nil, false},
		{"folder", mk("dir", func(p string) error { return os.Mkdir(p, 0o700) }), OutputFile, ErrNotRegular, false},
		{"socket", mk("sock", func(p string) error {
			l, err := net.Listen("unix", p)
			if err == nil {
				l.(*net.UnixListener).SetUnlinkOnClose(false)
				t.Cleanup(func() { l.Close() })
			}
			return err
		}), OutputFile, ErrNotRegular, false},
		{"character device", "chr", OutputStream, nil, true},
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
				p = mk(r.path, func(p string) error { return syscall.Mknod(p, kind|0o666, int(unix.Mkdev(1, 3))) })
			}
			got, err := JudgeOutput(p)
			if !errors.Is(err, r.err) || (err == nil && got != r.want) {
				t.Fatalf("JudgeOutput: %v, %v; want %v, %v", got, err, r.want, r.err)
			}
		})
	}
}

// TestOutputStreamOpensNeitherAFIFOWithoutReaderNorAFile: a FIFO no
// process reads is not waited for (the open fails at once); a regular
// file put in a name judged a stream is refused unwritten.
func TestOutputStreamOpensNeitherAFIFOWithoutReaderNorAFile(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenOutputStream(fifo); !errors.Is(err, syscall.ENXIO) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("a FIFO without a reader: %v, want ENXIO", err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	if f, err := OpenOutputStream(file); !errors.Is(err, ErrNotStream) {
		if f != nil {
			f.Close()
		}
		t.Fatalf("a regular file: %v, want ErrNotStream", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "mine" {
		t.Fatalf("the file now holds %q", b)
	}
}
