//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestPartIndexSwappedForFIFO
//
// Attack (a hostile medium or a local user who can write the folder the
// index is in): the part index FILE.parts, which join, verify and import
// take first, is a FIFO (or, on a medium mounted without nodev, a device
// node). The parts themselves are examined before they are opened and a
// FIFO or device is never opened (BUNDLE-12), but the index was opened
// with a plain open(2): it blocks until someone writes the FIFO (an
// unattended join hangs for good) and a device's driver runs.
//
// Before (review 75): 'ampbundle join FIFO -o out' was still blocked in
// open(2) after two seconds. Defence (docs/SPEC-DECISIONS.md BUNDLE-19):
// the index is opened as a part is (bundlebuild.OpenRegular): refused at
// once as io_error, naming it as not a regular file, nothing opened.
func TestPartIndexSwappedForFIFO(t *testing.T) {
	dir := t.TempDir()
	index := filepath.Join(dir, "a.ampb.parts")
	if err := syscall.Mkfifo(index, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	done := make(chan result, 1)
	go func() {
		done <- runCLI(t, nil, "join", index, "-o", filepath.Join(dir, "out.ampb"), "--json")
	}()
	var r result
	select {
	case r = <-done:
	case <-time.After(20 * time.Second): // a hang guard: a FIFO's open waits for a writer forever
		// Release the blocked open: a writer that closes at once.
		if w, err := os.OpenFile(index, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("join of a part index that is a FIFO is still blocked in open(2) after 20s: it should refuse anything but a regular file at once")
	}
	if r.code != 1 || errorCode(t, r) != "io_error" {
		t.Fatalf("join of a FIFO as the index: exit %d, %s %s; want io_error", r.code, r.stdout, r.stderr)
	}
}
