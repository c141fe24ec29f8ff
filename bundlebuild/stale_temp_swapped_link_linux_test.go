package bundlebuild

import (
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestStaleTempCleanupNeverFollowsASwappedInSymlink: the attack: a local
// user plants a folder named like one of our leftovers
// (".ampbundle-split-1.tmp", old mtime) in a shared folder where ampbundle
// writes temporaries: os.TempDir() for `build -o -`, `export -o -`,
// `join -o -` and `import -` (tempfile.go, cmd/ampbundle/stdio.go spoolStdin). While
// RemoveStaleTemps runs, the user keeps swapping (renameat2
// RENAME_EXCHANGE) that folder with a symlink to a folder of the victim.
// A clean-up that checks the entry through an O_NOFOLLOW descriptor but
// then lists and removes by path follows the symlink once it is swapped
// in, and deletes the victim's own files.
// Expected: nothing outside the folder that was checked and locked is ever
// removed: it is listed through the descriptor already opened and its
// entries unlinked relative to it (BUNDLE-6).
func TestStaleTempCleanupNeverFollowsASwappedInSymlink(t *testing.T) {
	shared := t.TempDir() // stands for /tmp
	victim := t.TempDir() // a folder of the user running ampbundle
	precious := filepath.Join(victim, "signing-key.pem")
	if err := os.WriteFile(precious, []byte("precious"), 0o600); err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(shared, ".ampbundle-split-1.tmp")
	swap := filepath.Join(shared, "attacker-link")
	future := time.Now().Add(time.Hour) // the planted folder is "stale"

	deadline := time.Now().Add(6 * time.Second)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		os.RemoveAll(planted) // a link is removed, never followed
		os.Remove(swap)
		if err := os.Mkdir(planted, 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(victim, swap); err != nil {
			t.Fatal(err)
		}
		stop := flipEntries(planted, swap)
		RemoveStaleTemps(shared, future)
		stop()
		if _, err := os.Lstat(precious); err != nil {
			t.Fatalf("attempt %d: RemoveStaleTemps of %s deleted %s through a swapped-in symlink (%v)", attempt, shared, precious, err)
		}
	}
}

// TestStaleTempCleanupDoesNotHangOnASwappedInFIFO: the same local user
// keeps swapping a stale plain leftover with a FIFO while RemoveStaleTemps
// runs. An open that waits for a writer would block the command that
// cleans up (every join, split and export) for ever; the leftover is
// opened without waiting, and a FIFO is then not the file checked.
func TestStaleTempCleanupDoesNotHangOnASwappedInFIFO(t *testing.T) {
	shared := t.TempDir()
	planted := filepath.Join(shared, ".ampbundle-build-1.tmp")
	fifo := filepath.Join(shared, "attacker-fifo")
	future := time.Now().Add(time.Hour)
	deadline := time.Now().Add(3 * time.Second)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		os.Remove(planted)
		os.Remove(fifo)
		if err := os.WriteFile(planted, nil, 0o666); err != nil {
			t.Fatal(err)
		}
		if err := unix.Mkfifo(fifo, 0o666); err != nil {
			t.Fatal(err)
		}
		stop := flipEntries(planted, fifo)
		done := make(chan struct{})
		go func() {
			RemoveStaleTemps(shared, future)
			close(done)
		}()
		select {
		case <-done:
		case <-time.After(5 * time.Second):
			stop()
			for _, p := range []string{planted, fifo} { // unblock the stuck open
				if f, err := os.OpenFile(p, os.O_WRONLY|unix.O_NONBLOCK, 0); err == nil {
					f.Close()
				}
			}
			t.Fatalf("attempt %d: RemoveStaleTemps blocked opening a FIFO swapped in for a stale leftover", attempt)
		}
		stop()
	}
}

// flipEntries is the attacker's flipper: it keeps exchanging the entries a
// and b (renameat2 RENAME_EXCHANGE) until the returned stop is called.
func flipEntries(a, b string) (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			if err := unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE); err != nil {
				return
			}
		}
	}()
	return func() {
		done.Store(true)
		wg.Wait()
	}
}
