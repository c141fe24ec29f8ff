//go:build linux

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// TestLinkNewRenameFallbackNeverReplacesANewFile
//
// Attack (a local user who can write the output folder, where the final
// name cannot be hard-linked): LinkNew's fallback checks that out is
// absent (lstat), then renames tmp over it; a file the user creates at
// out between the two is replaced, though LinkNew promises never to
// replace a file. Here the link fails because tmp has as many links as
// the file system allows (EMLINK; a FAT or network medium without hard
// links takes the same fallback), and a goroutine keeps creating out
// (O_EXCL) while LinkNew runs. Before review 85 a created file was
// replaced within a few thousand moves (well under a second). Defence
// (CLI-32): where the system has an exclusive rename (Linux
// renameat2 RENAME_NOREPLACE) the fallback uses it and a file at out is
// never replaced (fs.ErrExist).
func TestLinkNewRenameFallbackNeverReplacesANewFile(t *testing.T) {
	dir := t.TempDir()
	tmp, out := filepath.Join(dir, "tmp"), filepath.Join(dir, "out")
	if err := os.WriteFile(tmp, []byte("ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	links := filepath.Join(dir, "links")
	if err := os.Mkdir(links, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := 0; ; i++ {
		err := os.Link(tmp, filepath.Join(links, strconv.Itoa(i)))
		if errors.Is(err, syscall.EMLINK) {
			break
		}
		if err != nil || i > 70000 {
			t.Skipf("no link limit here to make link(2) fail: %v", err)
		}
	}
	// gen counts the moves; the racer records the move during which it
	// created out (gen read after out was removed for that move).
	var gen, createdIn atomic.Int64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			g := gen.Load()
			if f, err := os.OpenFile(out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600); err == nil {
				createdIn.Store(g)
				f.Close()
			}
		}
	}()
	defer func() { close(stop); <-done }()
	// Generous: without the exclusive rename a hit came well within a
	// tenth of a second.
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) {
		os.Remove(out)
		g := gen.Add(1)
		err := LinkNew(tmp, out)
		if err == nil {
			// The racer's file was created after the removal and before
			// the move (after it, out is taken): LinkNew replaced it.
			if createdIn.Load() == g {
				t.Fatal("LinkNew replaced a file created at the final name after its check")
			}
			if err := os.Rename(out, tmp); err != nil {
				t.Fatal(err)
			}
		} else if !errors.Is(err, fs.ErrExist) {
			t.Fatalf("LinkNew: %v", err)
		}
	}
}
