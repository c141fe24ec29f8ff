//go:build linux

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// descriptorCLIEnv carries the arguments (a JSON list) of the command
// TestOutputThroughDescriptorHelper runs in a process of its own.
const descriptorCLIEnv = "AMPBUNDLE_TEST_DESCRIPTOR_CLI"

// TestOutputThroughDescriptorHelper is not a test: run as a subprocess
// by descriptorRun, it runs the CLI with the process's own stdin, stdout
// and stderr (cliutil.OS), so that /proc/self/fd/1 is a real magic link
// to the file the test redirected stdout to, and exits with its code.
func TestOutputThroughDescriptorHelper(t *testing.T) {
	raw := os.Getenv(descriptorCLIEnv)
	if raw == "" {
		t.Skip("run by descriptorRun only")
	}
	var args []string
	if err := json.Unmarshal([]byte(raw), &args); err != nil {
		os.Exit(99)
	}
	env := cliutil.OS()
	os.Exit(cliutil.Run(context.Background(), newApp(env), env, append([]string{"ampbundle"}, args...)))
}

// descriptorRun runs the CLI with args in a process of its own, its
// stdout the file stdout (opened by the caller, as a shell's > or >>
// does), TMPDIR tmp; it returns the exit code and what went to stderr.
func descriptorRun(t *testing.T, tmp string, stdout *os.File, args ...string) (int, string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^TestOutputThroughDescriptorHelper$")
	cmd.Env = append(os.Environ(), descriptorCLIEnv+"="+string(raw), "TMPDIR="+tmp)
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = stdout, &stderr
	err = cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0, stderr.String()
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	}
	t.Fatal(err)
	return 0, ""
}

// descriptorName is an -o FILE that stands for the process's stdout.
type descriptorName struct {
	name string
	// make returns the name to give, made in dir where it is a link of
	// the test's own.
	make func(t *testing.T, dir string) string
}

// descriptorNames: the names of stdout a user writes (the real
// /dev/stdout is added last by the test that uses them). A link of
// another's that leads there is refused (CLI-105,
// TestOutputThroughAPlantedLinkToStdoutIsRefused).
var descriptorNames = []descriptorName{
	{"/dev/fd/1", func(*testing.T, string) string { return "/dev/fd/1" }},
	{"/proc/self/fd/1", func(*testing.T, string) string { return "/proc/self/fd/1" }},
}

// TestOutputNamedThroughADescriptorIsWrittenIntoNotRenamedOver: the
// threat (docs/SPEC-DECISIONS.md CLI-103, CLI-104): `ampbundle build -o
// /dev/stdout > x.ampb` found with os.Stat a regular file (x.ampb, where
// /dev/stdout's link leads), so it wrote a temporary file beside the
// name, in /dev, and renamed it over the name: as root /dev/stdout, the
// link, became a regular file holding the bundle, x.ampb stayed empty;
// /dev/fd/1 and /proc/self/fd/1 were io_error (no file can be made in
// /proc). The text summary went to stdout too, after the bundle. Now
// such a name is a stream: the command writes into the file the
// descriptor is, through it (a `>` redirection leaves exactly the bytes
// the command writes to a file of its own, `>>` appends them), the
// summary goes to stderr, and the link is left as it was. Real magic
// links: the command runs in a process of its own, its stdout a file in
// the test's folder. The writers: build (writeAtomic), export
// (writeOutput), pull of a bundle (pullBundle).
func TestOutputNamedThroughADescriptorIsWrittenIntoNotRenamedOver(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	db := storeWithSamples(t)
	layout := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+layout+":v1")
	writers := []struct {
		name string
		args func(out string) []string
	}{
		{"build", func(out string) []string {
			return []string{"build", filepath.Join(testdata, "translate"), "-o", out, "--key", key, "--created", "2026-11-01T00:00:00Z"}
		}},
		{"export", func(out string) []string { return []string{"export", translateID, "--db", db, "-o", out} }},
		{"pull", func(out string) []string { return []string{"pull", "oci-layout:" + layout + ":v1", "-o", out} }},
	}
	names := descriptorNames
	if st, err := os.Lstat("/dev/stdout"); err == nil && st.Mode().Type() == fs.ModeSymlink {
		// The real /dev/stdout last, and only once every name of the
		// test's own passed: a writer that renames over it would replace
		// this machine's /dev/stdout as root.
		names = append(names[:len(names):len(names)], descriptorName{"/dev/stdout", func(*testing.T, string) string { return "/dev/stdout" }})
	}
	for _, w := range writers {
		file := filepath.Join(t.TempDir(), "file.ampb")
		mustRun(t, w.args(file)...)
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range names {
			for _, appendMode := range []bool{false, true} {
				if n.name == "/dev/stdout" && t.Failed() {
					t.Fatal("not run on the real /dev/stdout: a name of the test's own failed")
				}
				tmp, dir := t.TempDir(), t.TempDir()
				out := n.make(t, dir)
				before := namesIn(t, dir)
				redirect := filepath.Join(t.TempDir(), "redirected")
				head := []byte("kept\n")
				if err := os.WriteFile(redirect, append(head, bytes.Repeat([]byte("x"), 2*len(want))...), 0o600); err != nil {
					t.Fatal(err)
				}
				flag, wantFile := os.O_WRONLY|os.O_TRUNC, want // the shell's >
				if appendMode {
					if err := os.WriteFile(redirect, head, 0o600); err != nil {
						t.Fatal(err)
					}
					flag, wantFile = os.O_WRONLY|os.O_APPEND, append(head[:len(head):len(head)], want...) // >>
				}
				stdout, err := os.OpenFile(redirect, flag, 0)
				if err != nil {
					t.Fatal(err)
				}
				code, stderr := descriptorRun(t, tmp, stdout, w.args(out)...)
				stdout.Close()
				got, err := os.ReadFile(redirect)
				if err != nil {
					t.Fatal(err)
				}
				switch {
				case code != 0:
					t.Errorf("%s -o %s (>> %v): exit %d: %s", w.name, n.name, appendMode, code, stderr)
				case !bytes.Equal(got, wantFile):
					t.Errorf("%s -o %s (>> %v): stdout's file holds %d bytes, want the %d the command writes (the summary on stderr)", w.name, n.name, appendMode, len(got), len(wantFile))
				case !strings.Contains(stderr, "sha256") && !strings.Contains(stderr, "digest"):
					t.Errorf("%s -o %s (>> %v): the summary is not on stderr: %q", w.name, n.name, appendMode, stderr)
				}
				if st, err := os.Lstat(out); err != nil || st.Mode().Type() != fs.ModeSymlink {
					t.Errorf("%s -o %s: the name is now %v (%v), want the link it was", w.name, n.name, st.Mode().Type(), err)
				}
				if after := namesIn(t, dir); strings.Join(after, ",") != strings.Join(before, ",") {
					t.Errorf("%s -o %s: the folder now holds %v, want %v", w.name, n.name, after, before)
				}
				if left := namesIn(t, tmp); len(left) != 0 {
					t.Errorf("%s -o %s: the temporary folder still holds %v", w.name, n.name, left)
				}
			}
		}
	}
}

// TestOutputToStdoutsPipeCarriesTheOutputAlone: with stdout a pipe,
// `ampbundle build -o /dev/stdout | sha256sum` wrote the bundle into the
// pipe (CLI-100) and then its text summary into the same pipe: the
// reader got a bundle with a line of text after it, which no verify
// reads and whose hash is no bundle's (docs/SPEC-DECISIONS.md CLI-104).
// Now a name that leads to the file stdout is gets the summary sent to
// stderr, as `-o -` does: the reader gets exactly the bundle. The
// writers: build, export and pull of a bundle (summaryTo).
func TestOutputToStdoutsPipeCarriesTheOutputAlone(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	db := storeWithSamples(t)
	layout := filepath.Join(t.TempDir(), "layout")
	mustRun(t, "push", sampleFile("translate"), "oci-layout:"+layout+":v1")
	for _, args := range [][]string{
		{"build", filepath.Join(testdata, "translate"), "--key", key, "--created", "2026-11-01T00:00:00Z", "-o"},
		{"export", translateID, "--db", db, "-o"},
		{"pull", "oci-layout:" + layout + ":v1", "-o"},
		// revoke's summary went to stdout itself, after the statement
		// (sign, receipt, rotate and heartbeat print theirs the same way).
		{"revoke", "--key", key, "--scope", "org.example", "--revoke-bundle", "org.example.translate@1", "--created", "2026-11-01T00:00:00Z", "-o"},
	} {
		file := filepath.Join(t.TempDir(), "file.ampb")
		mustRun(t, append(args[:len(args):len(args)], file)...)
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out := descriptorNames[0].make(t, t.TempDir()) // /dev/fd/1
		r, w, err := os.Pipe()
		if err != nil {
			t.Fatal(err)
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
			t.Fatalf("%s -o (stdout, a pipe): exit %d: %s", args[0], code, stderr)
		}
		if !bytes.Equal(b, want) {
			t.Errorf("%s -o (stdout, a pipe): the reader got %d bytes, want the %d of the output alone", args[0], len(b), len(want))
		}
	}
}

// TestOutputThroughAPlantedLinkToStdoutIsRefused: whoever may write an
// output's folder planted shared/out -> /dev/stdout (or a link to
// /proc/self/fd/1): the output of a root-run command went to its own
// stdout, a terminal or a log, and for pull the bytes a publisher chose
// (escape sequences reach the terminal raw), while it printed "wrote
// shared/out". Now only a name the user wrote for stdout is written
// through; a link of another's that leads there is io_error before
// anything is read or written, and nothing reaches stdout
// (docs/SPEC-DECISIONS.md CLI-105).
func TestOutputThroughAPlantedLinkToStdoutIsRefused(t *testing.T) {
	for _, target := range []string{"/dev/stdout", "/proc/self/fd/1", "/dev/fd/1"} {
		dir := t.TempDir()
		out := filepath.Join(dir, "out.ampb")
		if err := os.Symlink(target, out); err != nil {
			t.Fatal(err)
		}
		stdout, err := os.Create(filepath.Join(t.TempDir(), "stdout"))
		if err != nil {
			t.Fatal(err)
		}
		code, stderr := descriptorRun(t, t.TempDir(), stdout, "export", translateID, "--db", storeWithSamples(t), "-o", out)
		stdout.Close()
		got, err := os.ReadFile(stdout.Name())
		if err != nil {
			t.Fatal(err)
		}
		if code == 0 || !strings.Contains(stderr, "is not a regular file") || len(got) != 0 {
			t.Fatalf("export -o a link planted to %s: exit %d, stdout %d bytes, stderr %q; want the refusal of a name that is not a regular file (io_error) and nothing on stdout", target, code, len(got), stderr)
		}
		if st, err := os.Lstat(out); err != nil || st.Mode().Type() != fs.ModeSymlink {
			t.Fatalf("the planted link is no longer a link: %v, %v", st, err)
		}
	}
}
