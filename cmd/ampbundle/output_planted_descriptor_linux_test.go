//go:build linux

package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// TestOutputLinkToAnotherProcesssDescriptorIsRefused: the threat found
// (docs/SPEC-DECISIONS.md CLI-105): an unprivileged user opens a file
// only root may write (O_PATH is enough) and plants shared/x ->
// /proc/<their pid>/fd/N; root's `ampbundle revoke … -o shared/x` judged
// the name a descriptor's, reopened it O_WRONLY and overwrote the file's
// first bytes. Now a name standing for another process's descriptor is
// io_error ("is not a regular file") before anything is written, also
// with --force, and the file is unchanged. The other process is a child
// holding the file open (its descriptor 3).
func TestOutputLinkToAnotherProcesssDescriptorIsRefused(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(dir, "root-only")
	const content = "root's file, never overwritten"
	if err := os.WriteFile(victim, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(victim)
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "120")
	child.ExtraFiles = []*os.File{f}
	if err := child.Start(); err != nil {
		t.Skip("no sleep to run:", err)
	}
	f.Close()
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	target := fmt.Sprintf("/proc/%d/fd/3", child.Process.Pid)
	for _, w := range outputWriters(t) {
		for _, force := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s force=%v", w.name, force), func(t *testing.T) {
				tmp := t.TempDir()
				t.Setenv("TMPDIR", tmp)
				shared := t.TempDir()
				planted := filepath.Join(shared, "x")
				if err := os.Symlink(target, planted); err != nil {
					t.Fatal(err)
				}
				for _, out := range []string{planted, target} {
					if name, msg := w.write(t, out, force); name != "io_error" || !strings.Contains(msg, "is not a regular file") {
						t.Errorf("%s -o %s: %q (%s), want io_error, not a regular file", w.name, out, name, msg)
					}
				}
				if b, _ := os.ReadFile(victim); string(b) != content {
					t.Fatalf("the other process's file now holds %d bytes, starting %q", len(b), b[:min(len(b), 24)])
				}
				if st, err := os.Lstat(planted); err != nil || st.Mode().Type() != fs.ModeSymlink {
					t.Fatalf("the planted link is now %v (%v)", st.Mode().Type(), err)
				}
				if left := namesIn(t, tmp); len(left) != 0 {
					t.Fatalf("the temporary folder still holds %v", left)
				}
			})
		}
	}
}

// TestOutputDevNullIsADiscard: -o /dev/null, the literal name, is a
// discard (docs/SPEC-DECISIONS.md CLI-105): the output is produced and
// checked complete, the command exits 0 and prints its summary to
// stdout, as for a file (CLI-104 had sent it to stderr when stdout was
// /dev/null too), and nothing is opened: /dev/null stays the character
// device it was, and nothing is left in the temporary folder.
func TestOutputDevNullIsADiscard(t *testing.T) {
	before, err := os.Lstat("/dev/null")
	if err != nil || before.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice {
		t.Skip("no /dev/null character device here")
	}
	for _, w := range outputWriters(t) {
		for _, out := range []string{"/dev/null", "/dev//null"} {
			tmp := t.TempDir()
			t.Setenv("TMPDIR", tmp)
			if name, msg := w.write(t, out, false); name != "" {
				t.Errorf("%s -o %s: %s: %s", w.name, out, name, msg)
			}
			if left := namesIn(t, tmp); len(left) != 0 {
				t.Errorf("%s -o %s: the temporary folder still holds %v", w.name, out, left)
			}
		}
	}
	key := sampleKey(t, "example-publisher")
	r := runCLI(t, nil, "build", filepath.Join(testdata, "translate"), "-o", "/dev/null", "--key", key, "--created", "2026-11-01T00:00:00Z", "--json")
	var doc struct {
		File   string `json:"file"`
		SHA256 string `json:"sha256"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &doc) != nil || doc.File != "/dev/null" {
		t.Fatalf("build -o /dev/null --json: exit %d, stdout %q, stderr %q; want the summary on stdout", r.code, r.stdout, r.stderr)
	}
	after, err := os.Lstat("/dev/null")
	if err != nil || after.Mode().Type() != fs.ModeDevice|fs.ModeCharDevice || !os.SameFile(before, after) {
		t.Fatalf("/dev/null is now %v (%v)", after.Mode(), err)
	}
}

// TestOutputToDevStdoutOnASocketOrPipeCarriesTheExactBytes: `-o
// /dev/stdout` was refused when stdout was a socket (CLI-100 wrote only
// into character devices and FIFOs). A name standing for one of the
// process's own descriptors is written through a duplicate of it,
// whatever it is (docs/SPEC-DECISIONS.md CLI-105): the reader gets
// exactly the bytes the command writes to a file, the summary goes to
// stderr.
func TestOutputToDevStdoutOnASocketOrPipeCarriesTheExactBytes(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	args := []string{"build", filepath.Join(testdata, "translate"), "--key", key, "--created", "2026-11-01T00:00:00Z", "-o"}
	file := filepath.Join(t.TempDir(), "file.ampb")
	mustRun(t, append(args[:len(args):len(args)], file)...)
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"/proc/self/fd/1"}
	if st, err := os.Lstat("/dev/stdout"); err == nil && st.Mode().Type() == fs.ModeSymlink {
		names = append(names, "/dev/stdout")
	}
	for _, kind := range []string{"socketpair", "pipe"} {
		for _, out := range names {
			var r, w *os.File
			if kind == "pipe" {
				if r, w, err = os.Pipe(); err != nil {
					t.Fatal(err)
				}
			} else {
				fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
				if err != nil {
					t.Fatal(err)
				}
				r, w = os.NewFile(uintptr(fds[0]), "r"), os.NewFile(uintptr(fds[1]), "w")
			}
			got := make(chan []byte, 1)
			go func() {
				b, _ := io.ReadAll(r)
				got <- b
			}()
			code, stderr := descriptorRun(t, t.TempDir(), w, append(args[:len(args):len(args)], out)...)
			w.Close()
			b := <-got
			r.Close()
			if code != 0 {
				t.Fatalf("build -o %s (stdout a %s): exit %d: %s", out, kind, code, stderr)
			}
			if !bytes.Equal(b, want) {
				t.Errorf("build -o %s (stdout a %s): the reader got %d bytes, want the %d of the output alone", out, kind, len(b), len(want))
			}
			if !strings.Contains(stderr, "sha256") {
				t.Errorf("build -o %s (stdout a %s): the summary is not on stderr: %q", out, kind, stderr)
			}
		}
	}
}

// TestSummaryOfDevNullGoesToStdoutAlsoWhenStdoutIsDevNull: `-o /dev/null
// >/dev/null` printed the summary on stderr, since summaryTo compared
// the inode of the name with stdout's (CLI-104's namesStdout). The
// summary goes to stderr only for `-o -` or a name standing for this
// process's descriptor 1 (docs/SPEC-DECISIONS.md CLI-105). stdout here
// is /dev/null opened for reading only: nothing is written to it.
func TestSummaryOfDevNullGoesToStdoutAlsoWhenStdoutIsDevNull(t *testing.T) {
	null, err := os.Open("/dev/null")
	if err != nil {
		t.Skip("no /dev/null here:", err)
	}
	defer null.Close()
	var stderr bytes.Buffer
	env := &cliutil.Env{Stdout: null, Stderr: &stderr}
	if w := summaryTo(env, "/dev/null"); w != io.Writer(null) {
		t.Fatal("-o /dev/null with stdout /dev/null: the summary goes to stderr, want stdout")
	}
	if w := summaryTo(env, "-"); w != io.Writer(&stderr) {
		t.Fatal("-o -: the summary does not go to stderr")
	}
	if w := summaryTo(env, "/proc/self/fd/1"); w != io.Writer(&stderr) {
		t.Fatal("-o /proc/self/fd/1: the summary does not go to stderr")
	}
}
