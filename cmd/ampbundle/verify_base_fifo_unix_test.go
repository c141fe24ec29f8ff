//go:build unix

package main

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestVerifyBaseSwappedForFIFO: the base given to 'ampbundle verify
// DELTA --base FILE' is a FIFO (or, on a medium mounted without nodev, a
// device node). verify opens the bundle it checks only when it is a
// regular file (BUNDLE-19), but opened the base with a plain open(2)
// (verifyBase): it blocked until someone wrote the FIFO, and a device's
// driver ran. The base is opened as the bundle is: io_error at once.
func TestVerifyBaseSwappedForFIFO(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	dir := t.TempDir()
	delta, base := filepath.Join(dir, "delta.ampb"), filepath.Join(dir, "base.ampb")
	mustRun(t, "build", translateV2Source(t), "-o", delta, "--key", key, "--created", "2026-11-10T00:00:00Z", "--base", sampleFile("translate"))
	if err := syscall.Mkfifo(base, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	done := make(chan result, 1)
	go func() {
		done <- runCLI(t, nil, "verify", delta, "--trust", samplePub("example-publisher"), "--base", base, "--json")
	}()
	select {
	case r := <-done:
		if r.code != 1 || errorCode(t, r) != "io_error" {
			t.Fatalf("verify --base of a FIFO: exit %d, %s %s; want io_error", r.code, r.stdout, r.stderr)
		}
	case <-time.After(20 * time.Second): // a hang guard: a FIFO's open waits for a writer forever
		// Release the blocked open: a writer that closes at once.
		if w, err := os.OpenFile(base, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		<-done
		t.Fatal("verify --base of a FIFO is still blocked in open(2) after 20s")
	}
}
