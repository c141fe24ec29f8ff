//go:build unix

package regfiletest

import (
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// WatchedNode makes a FIFO at path that stands in for a device node: a
// writer blocks in open(2) of it and is released when anything opens it
// for reading, as a device's driver would run. The test is skipped where
// no FIFO can be made. Opened reports, after waiting a moment, whether
// anything opened the node since. The writer is released when the test
// ends.
func WatchedNode(t testing.TB, path string) (opened func() bool) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	ch := make(chan struct{})
	go func() {
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			close(ch)
			w.Close()
		}
	}()
	t.Cleanup(func() {
		// Release the writer if nobody opened the node.
		if r, err := os.OpenFile(path, os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			time.Sleep(10 * time.Millisecond)
			r.Close()
		}
	})
	time.Sleep(50 * time.Millisecond) // let the writer block in open(2)
	return func() bool {
		select {
		case <-ch:
			return true
		case <-time.After(100 * time.Millisecond):
			return false
		}
	}
}
