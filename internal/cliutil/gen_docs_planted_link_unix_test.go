//go:build unix

package cliutil

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestGenDocsNeverWritesThroughAPlantedLink: gen-docs wrote each
// reference file with os.WriteFile, which follows a link: whoever may
// write the output folder planted DIR/man/ampbundle.1 -> a file of the
// user running it (root), which was truncated and overwritten, and a
// FIFO there hung the command. Now a name that leads to anything but a
// regular file or nothing is io_error and nothing is written through
// it; a regular file is replaced by a rename (docs/SPEC-DECISIONS.md
// CLI-105).
func TestGenDocsNeverWritesThroughAPlantedLink(t *testing.T) {
	dir := t.TempDir()
	victim := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(victim, []byte("kept"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "ampbundle.1")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "ampbundle.md")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := writeDocFile(fifo, []byte("reference")); err == nil {
		t.Error("a FIFO at a reference name: written")
	}
	// A link to a regular file is replaced by the new file, its target
	// untouched.
	if err := writeDocFile(link, []byte("reference")); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "kept" {
		t.Fatalf("the link's target now holds %q", b)
	}
	if st, err := os.Lstat(link); err != nil || !st.Mode().IsRegular() {
		t.Fatalf("the name is not the new regular file: %v, %v", st, err)
	}
}
