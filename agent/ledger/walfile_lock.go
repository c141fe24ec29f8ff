//go:build unix || windows

package ledger

import (
	"os"
	"path/filepath"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// lockFile opens path and takes an exclusive advisory lock on it (tryLock:
// flock on unix, LockFileEx on Windows), waiting at most timeout, so two
// agents never share one log. Closing the file releases the lock. Before
// anything is made, the folder that holds it and the log is judged
// (logFolder, docs/SPEC-DECISIONS.md AGENT-44), and the lock file is
// opened only as openLock allows (AGENT-43).
func lockFile(path string, timeout time.Duration) (*os.File, error) {
	if err := logFolder(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := openLock(path)
	if err != nil {
		return nil, err
	}
	if err := waitLock(f, tryLock, timeout, "the ledger file is in use by another process"); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// lockLog takes an exclusive advisory lock on the open log file f itself
// (tryLockLog), waiting at most timeout. The lock file is found by the
// name the log was given, so two agents given two names of one file that
// are no symbolic link (hard links, or one file bind-mounted at two
// names) each took a lock file of their own and both wrote the log; the
// lock on the file is the same whatever name reached it
// (docs/SPEC-DECISIONS.md AGENT-50). Closing f releases it.
func lockLog(f *os.File, timeout time.Duration) error {
	return waitLock(f, tryLockLog, timeout, "the ledger file is in use by another process (through another name of it)")
}

// waitLock tries lock on f until it is taken or timeout has passed, then
// refuses with busy (ErrLedgerIO).
func waitLock(f *os.File, lock func(*os.File) (bool, error), timeout time.Duration, busy string) error {
	deadline := time.Now().Add(timeout)
	for {
		held, err := lock(f)
		if err != nil {
			return walIOError("cannot lock the ledger file", err)
		}
		if !held {
			return nil
		}
		if time.Now().After(deadline) {
			return amp.Named(amp.CodeUnavailable, ErrLedgerIO, "%s", busy)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unlockFile releases the lock (closing the file releases it).
func unlockFile(f *os.File) error { return f.Close() }

// openLock opens the lock file at path, creating it mode 0600 where
// nothing is at its name. A name that leads to anything but a regular
// file (a link, a FIFO, a device) is refused without being opened, and
// the open follows no link put there since (lockNoFollow): a link
// planted by whoever may write the folder would have the agent create a
// file, or hold a lock, wherever it points. A lock file another user
// owns, or that group or others may write (logWriters, the log's rule),
// is refused: only whoever may write the folder can have put it there,
// and they may hold its lock to keep the agent out (AGENT-43).
func openLock(path string) (*os.File, error) {
	if st, err := os.Lstat(path); err == nil && !st.Mode().IsRegular() {
		return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO,
			"the ledger's lock file is not a regular file (%s); remove it (the agent makes its own), and keep others from writing the ledger's folder", st.Mode().Type())
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|lockNoFollow, 0o600)
	if err != nil {
		return nil, walIOError("cannot open the ledger's lock file", err)
	}
	st, err := f.Stat()
	switch {
	case err != nil:
		err = walIOError("cannot open the ledger's lock file", err)
	case !st.Mode().IsRegular():
		err = amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger's lock file is not a regular file (%s)", st.Mode().Type())
	default:
		err = logWriters(st, "the ledger's lock file")
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
