package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"sync"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// Syncer runs syncs (its Sync method) and keeps the ones of one spool
// folder apart within this process, as the lock of the system keeps apart
// those of two processes (lockSpool): a sync of a spool folder that
// another sync through the same Syncer holds is refused store_in_use
// before it opens anything in that folder. Most systems' file locks do
// that within a process as well; the fcntl lock of Solaris and AIX is the
// process's, so there a Syncer is what keeps two syncs of one process
// apart, and syncs run at once in one process should share one
// (docs/SPEC-DECISIONS.md MIRROR-24). The zero value is ready to use; a
// Syncer must not be copied after its first use.
type Syncer struct {
	mu sync.Mutex
	// held are the spool folders (by spoolKey) a sync through this
	// Syncer holds.
	held map[string]bool
	// hooks are set by tests only (export_test.go).
	hooks syncHooks
}

// syncHooks are what a test changes in the syncs of a Syncer
// (export_test.go); the zero value changes nothing.
type syncHooks struct {
	// headBudget replaces maxRefusedLargeHeadBytes when set.
	headBudget int64
	// verified, when set, is called at each check of a bundle file's
	// signatures against the store's trust.
	verified func()
	// lockFile, when set, replaces the system's lock of the spool's lock
	// file (lockSpool): a test takes the fcntl lock of Solaris and AIX
	// with it where the system has flock.
	lockFile func(*os.File) (busy bool, err error)
}

// lockSpool makes the spool folder dir when missing and holds it for one
// sync through s, in this process (hold) and against other processes
// (the package's lockSpool); it returns what releases both. Another sync
// holding it is store_in_use; a folder that cannot be made or locked is
// store_io (docs/SPEC-DECISIONS.md MIRROR-18, MIRROR-24).
func (s *Syncer) lockSpool(dir string) (unlock func(), err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, amp.Named(0, resolver.ErrStoreIO, "cannot create the sync spool folder").WithCause(err)
	}
	// One sync at a time uses a spool folder: another would prune this
	// one's live partial file (pruneSpool) or write it at the same time.
	release, busy := s.hold(dir)
	if busy {
		return nil, errSpoolBusy()
	}
	unlockFile, busy, err := lockSpool(dir, s.hooks.lockFile)
	if err != nil || busy {
		release()
		var named *amp.Error
		if errors.As(err, &named) {
			return nil, err // it says what is wrong and what to do (removeNotAFile)
		}
		if err != nil {
			return nil, amp.Named(0, resolver.ErrStoreIO, "cannot lock the sync spool folder").WithCause(err)
		}
		return nil, errSpoolBusy()
	}
	return func() { unlockFile(); release() }, nil
}

// hold marks the spool folder dir held by a sync through s, and returns
// what releases it; busy when a sync through s holds it already. It is
// taken before the lock file is opened and released after it is closed:
// where the system's lock is the process's (fcntl), a second sync's open
// and close of that file would release the lock of the one that holds it.
func (s *Syncer) hold(dir string) (release func(), busy bool) {
	key := spoolKey(dir)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.held[key] {
		return nil, true
	}
	if s.held == nil {
		s.held = map[string]bool{}
	}
	s.held[key] = true
	return func() {
		s.mu.Lock()
		defer s.mu.Unlock()
		delete(s.held, key)
	}, false
}

// errSpoolBusy is the refusal of a sync whose spool folder another sync
// holds.
func errSpoolBusy() error {
	return amp.Named(0, resolver.ErrStoreInUse, "another sync of this store is running (its spool folder is locked): try again when it ends")
}

// spoolKey names the spool folder dir within the process: the path it
// resolves to, made absolute, so that two paths of one folder (through a
// link, or relative) name it once.
func spoolKey(dir string) string {
	if p, err := filepath.EvalSymlinks(dir); err == nil {
		dir = p
	}
	if p, err := filepath.Abs(dir); err == nil {
		dir = p
	}
	return dir
}
