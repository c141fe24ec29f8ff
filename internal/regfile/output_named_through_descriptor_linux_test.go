//go:build linux

package regfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// TestOutputWhoseNameStandsForADescriptorIsAStream: the threat
// (docs/SPEC-DECISIONS.md CLI-103): a name whose chain of links passes
// through a descriptor folder of the proc file system (/dev/stdout,
// /dev/fd/N, /proc/self/fd/N, or a link of one's own to them) leads, by
// os.Stat, to the regular file the descriptor is; judged OutputFile, the
// output was renamed over the name (the /dev/stdout link). Now it is
// OutputOwn (CLI-105); a regular file reached by a plain link, or by a
// link whose folder only looks like /proc (a folder of the test's, not
// the proc file system), is OutputFile as before.
func TestOutputWhoseNameStandsForADescriptorIsAStream(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	magic := fmt.Sprintf("/proc/self/fd/%d", f.Fd())
	link := func(name, target string) string {
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	fake := filepath.Join(dir, "proc", "1", "fd")
	if err := os.MkdirAll(fake, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(file, filepath.Join(fake, "3")); err != nil {
		t.Fatal(err)
	}
	rows := []struct {
		name    string
		path    string
		want    Output
		refused bool // a link of another's leading to a descriptor (CLI-105)
	}{
		{"/proc/self/fd/N", magic, OutputOwn, false},
		{"/proc/<our pid>/fd/N", fmt.Sprintf("/proc/%d/fd/%d", os.Getpid(), f.Fd()), OutputOwn, false},
		{"/dev/fd/N", fmt.Sprintf("/dev/fd/%d", f.Fd()), OutputOwn, false},
		{"a link planted to /proc/self/fd/N (the shape of /dev/stdout)", link("stdout", magic), OutputFile, true},
		{"a link to a link to it", link("stdout2", filepath.Join(dir, "stdout")), OutputFile, true},
		{"a plain link to the file", link("plain", file), OutputFile, false},
		{"the file itself", file, OutputFile, false},
		{"a link in a folder that only looks like /proc", filepath.Join(fake, "3"), OutputFile, false},
	}
	for _, r := range rows {
		got, err := judgeOutput(r.path, anyFD) // the test's descriptor stands for stdout
		if r.refused {
			if !errors.Is(err, ErrNotRegular) {
				t.Errorf("%s: %v, %v; want ErrNotRegular", r.name, got, err)
			}
			continue
		}
		if err != nil || got != r.want {
			t.Errorf("%s: %v, %v; want %v", r.name, got, err, r.want)
		}
	}
}

// TestOutputStreamThroughOwnDescriptorWritesAtItsOffset: a regular file
// reached through one of the process's own descriptors is written
// through that descriptor (docs/SPEC-DECISIONS.md CLI-103): never
// truncated, at the descriptor's own offset (what a shell's `>` or `>>`
// gave it), which moves past the bytes written, so that what the process
// writes to its stdout afterwards follows them. Reopening the name
// (offset 0) overwrote the file's first bytes instead.
func TestOutputStreamThroughOwnDescriptorWritesAtItsOffset(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("earlier output\n"); err != nil {
		t.Fatal(err)
	}
	w, err := openOutputStream(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), anyFD)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("the bundle\n"); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("the summary\n"); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if want := "earlier output\nthe bundle\nthe summary\n"; !bytes.Equal(got, []byte(want)) {
		t.Fatalf("the file holds %q, want %q", got, want)
	}
}

// TestOutputNamingAnotherProcesssDescriptorIsRefused: the threat found
// (docs/SPEC-DECISIONS.md CLI-105): a link planted to /proc/PID/fd/N of
// another process (here a child holding a file open) was OutputStream and
// reopened O_WRONLY by name, so whoever planted it had the writer
// overwrite a file they could only hold (O_PATH), not write. It is
// ErrNotRegular now, and OpenOutputStream opens nothing through it.
func TestOutputNamingAnotherProcesssDescriptorIsRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "victim")
	if err := os.WriteFile(file, []byte("root's file"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sleep", "60")
	cmd.ExtraFiles = []*os.File{f} // the child's descriptor 3
	if err := cmd.Start(); err != nil {
		t.Skip("no sleep to run:", err)
	}
	f.Close()
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	target := fmt.Sprintf("/proc/%d/fd/3", cmd.Process.Pid)
	planted := filepath.Join(dir, "x")
	if err := os.Symlink(target, planted); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{target, planted} {
		if k, err := JudgeOutput(p); !errors.Is(err, ErrNotRegular) {
			t.Errorf("JudgeOutput(%s): %v, %v; want ErrNotRegular", p, k, err)
		}
		if w, err := OpenOutputStream(p); !errors.Is(err, ErrNotStream) {
			if w != nil {
				w.WriteString("OVERWRITTEN")
				w.Close()
			}
			t.Errorf("OpenOutputStream(%s): %v, want ErrNotStream", p, err)
		}
	}
	if b, _ := os.ReadFile(file); string(b) != "root's file" {
		t.Fatalf("the file now holds %q", b)
	}
}

// TestOutputThroughOwnDescriptorWhateverItIs: one of this process's own
// descriptors is written through a duplicate of it whatever it is, a
// socket here (CLI-105; before, a socket was refused).
func TestOutputThroughOwnDescriptorWhateverItIs(t *testing.T) {
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b := os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	defer a.Close()
	defer b.Close()
	name := fmt.Sprintf("/dev/fd/%d", a.Fd())
	if k, err := judgeOutput(name, anyFD); err != nil || k != OutputOwn {
		t.Fatalf("JudgeOutput: %v, %v; want OutputOwn", k, err)
	}
	w, err := openOutputStream(name, anyFD)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.WriteString("bytes"); err != nil {
		t.Fatal(err)
	}
	w.Close()
	buf := make([]byte, 5)
	if _, err := io.ReadFull(b, buf); err != nil || string(buf) != "bytes" {
		t.Fatalf("read %q, %v", buf, err)
	}
}

// anyFD lets a test's own descriptor stand for stdout.
func anyFD(int) bool { return true }

// TestOutputThroughAnotherOwnDescriptorIsRefused: a link to
// /proc/self/fd/N planted at an output name, N a descriptor the command
// opened itself (the store, a key, a lock), would send the output into
// that file; only stdout and stderr are written through (CLI-105).
func TestOutputThroughAnotherOwnDescriptorIsRefused(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "store.db")
	if err := os.WriteFile(file, []byte("the store"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(file, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	planted := filepath.Join(dir, "out.ampb")
	if err := os.Symlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()), planted); err != nil {
		t.Fatal(err)
	}
	if k, err := JudgeOutput(planted); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("JudgeOutput: %v, %v; want ErrNotRegular", k, err)
	}
	if w, err := OpenOutputStream(planted); !errors.Is(err, ErrNotStream) {
		if w != nil {
			w.Close()
		}
		t.Fatalf("OpenOutputStream: %v; want ErrNotStream", err)
	}
	if k, err := JudgeOutput("/dev/stdout"); err != nil || k != OutputOwn {
		t.Fatalf("JudgeOutput(/dev/stdout): %v, %v; want OutputOwn", k, err)
	}
}
