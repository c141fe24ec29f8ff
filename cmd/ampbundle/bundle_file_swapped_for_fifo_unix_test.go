//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestBundleFileSwappedForFIFO
//
// Attack (a hostile medium or a local user who can write the folder): the
// file given to 'ampbundle verify' or 'ampbundle import' (a bundle, or
// what should be a part index) is a FIFO (or, on a medium mounted without
// nodev, a device node). join refuses a part index that is not a regular
// file (BUNDLE-19), but verify and import, finding no part index there,
// open the path as a bundle file with a plain open(2) (verify.go
// openVerifyInput, import.go openImportFile): it blocks until someone
// writes the FIFO, and a device's driver runs.
//
// Both must refuse at once as io_error, having opened nothing but a
// regular file (bundlebuild.OpenRegular, as join opens the index); before
// BUNDLE-19 was extended to them both stayed blocked in open(2).
func TestBundleFileSwappedForFIFO(t *testing.T) {
	for _, cmd := range []string{"verify", "import"} {
		t.Run(cmd, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "a.ampb")
			if err := syscall.Mkfifo(file, 0o600); err != nil {
				t.Skipf("no FIFO here: %v", err)
			}
			args := []string{cmd, file, "--json"}
			if cmd == "verify" {
				args = append(args, "--trust", samplePub("example-publisher"))
			} else {
				args = append(args, "--db", filepath.Join(dir, "store.db"))
			}
			done := make(chan result, 1)
			go func() { done <- runCLI(t, nil, args...) }()
			select {
			case r := <-done:
				if r.code != 1 || errorCode(t, r) != "io_error" {
					t.Fatalf("%s of a FIFO: exit %d, %s %s; want io_error", cmd, r.code, r.stdout, r.stderr)
				}
			case <-time.After(20 * time.Second): // a hang guard: a FIFO's open waits for a writer forever
				// Release the blocked open: a writer that closes at once.
				if w, err := os.OpenFile(file, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					w.Close()
				}
				<-done
				t.Fatalf("%s of a file that is a FIFO is still blocked in open(2) after 20s: it should refuse anything but a regular file at once", cmd)
			}
		})
	}
}
