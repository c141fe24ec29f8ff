//go:build unix

package main

import (
	"bytes"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// TestOutputJudgedAgainJustBeforeTheRename: the review of CLI-105 found
// that the CLI's writers judged the name only at the start: a FIFO (or
// any node) put at it while the output was built was renamed over (build,
// sign, receipt, revoke, rotate, heartbeat: writeAtomic; export and join
// with --force: writeOutput). Now the name is judged again just before
// the rename, as ocitransport's renameSynced does: io_error, the node
// stays, and no temporary file is left.
func TestOutputJudgedAgainJustBeforeTheRename(t *testing.T) {
	env := &cliutil.Env{Stdin: bytes.NewReader(nil), Stdout: io.Discard, Stderr: io.Discard, Now: time.Now}
	writers := map[string]func(out string, write func(io.Writer) error) error{
		"writeAtomic": func(out string, write func(io.Writer) error) error {
			_, _, _, err := writeAtomic(out, func(w io.Writer) (*bundle.Manifest, error) { return nil, write(w) })
			return err
		},
		"writeOutput --force": func(out string, write func(io.Writer) error) error {
			_, _, err := writeOutput(env, out, "test", true, write)
			return err
		},
	}
	for name, wr := range writers {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "out.ampb")
			if err := os.WriteFile(out, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			err := wr(out, func(w io.Writer) error {
				if err := os.Remove(out); err != nil {
					return err
				}
				if err := syscall.Mkfifo(out, 0o600); err != nil {
					return err
				}
				_, err := w.Write([]byte("the output"))
				return err
			})
			if errName(err) != "io_error" {
				t.Fatalf("%s over a FIFO put at the name meanwhile: %v, want io_error", name, err)
			}
			if st, err := os.Lstat(out); err != nil || st.Mode().Type() != fs.ModeNamedPipe {
				t.Fatalf("the FIFO is now %v (%v)", st.Mode().Type(), err)
			}
			if left := namesIn(t, dir); len(left) != 1 {
				t.Fatalf("the folder now holds %v, want only the FIFO", left)
			}
		})
	}
}
