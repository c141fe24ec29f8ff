//go:build linux

package regfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestOutputWhoseNameStandsForADescriptorIsAStream: the threat
// (docs/SPEC-DECISIONS.md CLI-103): a name whose chain of links passes
// through a descriptor folder of the proc file system (/dev/stdout,
// /dev/fd/N, /proc/self/fd/N, or a link of one's own to them) leads, by
// os.Stat, to the regular file the descriptor is; judged OutputFile, the
// output was renamed over the name (the /dev/stdout link). Now it is
// OutputStream; a regular file reached by a plain link, or by a link
// whose folder only looks like /proc (a folder of the test's, not the
// proc file system), is OutputFile as before.
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
		name string
		path string
		want Output
	}{
		{"/proc/self/fd/N", magic, OutputStream},
		{"/dev/fd/N", fmt.Sprintf("/dev/fd/%d", f.Fd()), OutputStream},
		{"a link to /proc/self/fd/N (the shape of /dev/stdout)", link("stdout", magic), OutputStream},
		{"a link to a link to it", link("stdout2", filepath.Join(dir, "stdout")), OutputStream},
		{"a plain link to the file", link("plain", file), OutputFile},
		{"the file itself", file, OutputFile},
		{"a link in a folder that only looks like /proc", filepath.Join(fake, "3"), OutputFile},
	}
	for _, r := range rows {
		got, err := JudgeOutput(r.path)
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
	w, err := OpenOutputStream(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
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
