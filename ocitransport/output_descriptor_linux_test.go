//go:build linux

package ocitransport_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/ocitransport"
)

// TestPullFileThroughDescriptorNames: PullFile to a name that stands for
// one of this process's own descriptors other than stdout and stderr
// (/proc/self/fd/N of a pipe) is refused, nothing written; a name that stands for another process's descriptor (a link
// planted to /proc/PID/fd/N, whose file the planter could not write) is
// io_error and the file is unchanged (docs/SPEC-DECISIONS.md CLI-105,
// amending OCI-44: before, it was reopened O_WRONLY and overwritten).
func TestPullFileThroughDescriptorNames(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	src := mustOpen(t, "oci-layout:"+filepath.Join(t.TempDir(), "layout"), ocitransport.Options{}, ocitransport.ReadWrite)
	a := pushSample(t, src, "v1")
	want, err := os.ReadFile(sampleBundle)
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(r)
		got <- b
	}()
	err = src.PullFile(context.Background(), a, fmt.Sprintf("/proc/self/fd/%d", w.Fd()))
	w.Close()
	// Only stdout and stderr are written through: another descriptor of
	// the process is one it opened itself, which a planted link to
	// /proc/self/fd/N would send the bundle into (CLI-105).
	if b := <-got; err == nil || len(b) != 0 {
		t.Fatalf("PullFile to its own pipe (not stdout): %v, the reader got %d bytes; want a refusal and none (%d would be the bundle)", err, len(b), len(want))
	}
	r.Close()

	dir := t.TempDir()
	victim := filepath.Join(dir, "root-only")
	if err := os.WriteFile(victim, []byte("kept"), 0o600); err != nil {
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
	planted := filepath.Join(t.TempDir(), "x")
	if err := os.Symlink(fmt.Sprintf("/proc/%d/fd/3", child.Process.Pid), planted); err != nil {
		t.Fatal(err)
	}
	if err := src.PullFile(context.Background(), a, planted); nameOf(err) != "io_error" {
		t.Fatalf("PullFile to a link to another process's descriptor: %v, want io_error", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "kept" {
		t.Fatalf("the other process's file now holds %q", b)
	}
}
