//go:build unix || windows

package ledger

import (
	"os"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// lockFile opens path and takes an exclusive advisory lock on it (tryLock:
// flock on unix, LockFileEx on Windows), waiting at most timeout, so two
// agents never share one log. Closing the file releases the lock.
func lockFile(path string, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, walIOError("cannot open the ledger's lock file", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		held, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, walIOError("cannot lock the ledger file", err)
		}
		if !held {
			return f, nil
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file is in use by another process")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unlockFile releases the lock (closing the file releases it).
func unlockFile(f *os.File) error { return f.Close() }
