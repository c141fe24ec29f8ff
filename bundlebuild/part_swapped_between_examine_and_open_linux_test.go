//go:build linux

package bundlebuild

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestPartSwappedBetweenExamineAndOpen
//
// Attack (a local user who can write the parts folder, racing the
// reader): the amended BUNDLE-12 examines the file a part's path leads to
// (lstat) and then opens that path again (O_NOFOLLOW|O_NONBLOCK). The two
// are separate looks at a name the user controls: a node put in the
// part's place between them (here by exchanging the part and a FIFO,
// renameat2 RENAME_EXCHANGE, over and over) is opened before fstat and
// os.SameFile refuse it. O_NOFOLLOW stops a link, not a node: a FIFO (or
// a device hard-linked in on the same file system) is opened, and open(2)
// of a device runs its driver, the side effect the amendment was about.
//
// Before (review 75): within a few hundred attempts the reader opened the
// FIFO (a writer blocked in open(2) of it, through a second hard link, was
// released). Defence (docs/SPEC-DECISIONS.md BUNDLE-17): the file is
// examined through a descriptor that opens nothing (O_PATH) and only
// that very inode is opened, so no name is looked up twice.
//
// Time: at most 3 s of attempts (the race is usually won in well under a
// second on two cores); a pass means no opening in all of them.
func TestPartSwappedBetweenExamineAndOpen(t *testing.T) {
	x, found := locatedSplit(t)
	dir := filepath.Dir(found[1])
	fifo := filepath.Join(dir, "swap-node")
	anchor := filepath.Join(dir, "anchor")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	if err := os.Link(fifo, anchor); err != nil {
		t.Skipf("no hard link to a FIFO here: %v", err)
	}
	if err := unix.Renameat2(unix.AT_FDCWD, found[1], unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("no RENAME_EXCHANGE here: %v", err)
	}
	var stop atomic.Bool
	var opened atomic.Int64
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { // the user: swaps the part and the FIFO, again and again
		defer wg.Done()
		for !stop.Load() {
			unix.Renameat2(unix.AT_FDCWD, found[1], unix.AT_FDCWD, fifo, unix.RENAME_EXCHANGE)
		}
	}()
	go func() { // the "driver": released whenever someone opens the FIFO
		defer wg.Done()
		for {
			w, err := os.OpenFile(anchor, os.O_WRONLY, 0)
			if stop.Load() {
				if err == nil {
					w.Close()
				}
				return
			}
			if err == nil {
				opened.Add(1)
				w.Close()
			}
		}
	}()
	attempts := 0
	for end := time.Now().Add(3 * time.Second); time.Now().Before(end) && opened.Load() == 0; attempts++ {
		pr := NewPartsReader(x, found)
		pr.i = 1
		if f, err := pr.open(); err == nil {
			f.Close()
		}
	}
	time.Sleep(20 * time.Millisecond) // let a released writer count
	stop.Store(true)
	// Release the writer blocked in open(2), then wait for both.
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	if r, err := os.OpenFile(anchor, os.O_RDONLY|syscall.O_NONBLOCK, 0); err == nil {
		defer r.Close()
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second): // a hang guard for a loaded machine
		t.Fatal("the swapper or the writer did not stop")
	}
	if n := opened.Load(); n > 0 {
		t.Fatalf("the reader opened the FIFO swapped in for part 2 between its examination and its open (%d times in %d attempts): a device would have run its driver", n, attempts)
	}
	t.Logf("%d attempts, the FIFO never opened", attempts)
}
