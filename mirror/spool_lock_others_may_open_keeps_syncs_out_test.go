//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestSpoolLockOthersMayOpenKeepsEverySyncOut: MIRROR-18 has a
// sync take an exclusive flock on DB.sync/sync.lock, opened with O_CREATE
// and whatever the file already there is: its owner and mode are not
// looked at. Another user who may write the spool folder (one made 0777
// or group-writable, which MIRROR-16 only warns about: it costs
// re-downloads) makes sync.lock first, readable by them, and holds a flock
// on it (a read-only descriptor may hold one) for ever: every sync of the
// store, revocations included, is refused store_in_use, on every run, as
// though a sync were running. The test stands for that user with a lock
// file of mode 0644 in a spool folder everyone may write, held by a
// read-only descriptor of the test (another user needs root to test).
// Before MIRROR-21: store_in_use. Should: a lock file others may open (not the
// sync's user's or root's, or readable or writable by group or others) is
// not the lock: it is replaced by one of mode 0600, and the sync runs.
func TestSpoolLockOthersMayOpenKeepsEverySyncOut(t *testing.T) {
	_, ts := startMirror(t, newStore(t, testBundle(t, 1)), nil)
	s := agentStore(t)
	spool := filepath.Join(filepath.Dir(s.Path()), "sync")
	if err := os.Mkdir(spool, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(spool, 0o777); err != nil { // a spool others may write (MIRROR-16 warns)
		t.Fatal(err)
	}
	lock := filepath.Join(spool, spoolLockName)
	if err := os.WriteFile(lock, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(lock, 0o644); err != nil { // the other user's file, readable by them
		t.Fatal(err)
	}
	held, err := os.Open(lock) // read only, as the other user may
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := syscall.Flock(int(held.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, s, ts.URL, func(o *SyncOptions) { o.SpoolDir = spool })
	if errors.Is(err, resolver.ErrStoreInUse) {
		t.Fatalf("a lock file others may open, held by them, kept the sync out (%v): every later run would be refused the same way", err)
	}
	if err != nil || rep.Count(OutcomeImported) != 1 {
		t.Fatalf("sync past a lock file others may open: %+v %v", rep, err)
	}
	if fi, err := os.Lstat(lock); err == nil && fi.Mode().Perm() != 0o600 {
		t.Fatalf("the lock file left has mode %v", fi.Mode().Perm())
	}
}
