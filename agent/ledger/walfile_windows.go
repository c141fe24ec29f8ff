//go:build windows

package ledger

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"golang.org/x/sys/windows"
)

// lockFile opens path and takes an exclusive LockFileEx lock on its first
// byte, waiting at most timeout: the Windows counterpart of the flock the
// unix build takes, so two agents never share one log. Closing the file
// releases the lock.
func lockFile(path string, timeout time.Duration) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, walIOError("cannot open the ledger's lock file", err)
	}
	deadline := time.Now().Add(timeout)
	for {
		ol := new(windows.Overlapped)
		err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, windows.ERROR_LOCK_VIOLATION) {
			f.Close()
			return nil, walIOError("cannot lock the ledger file", err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, amp.Named(amp.CodeUnavailable, ErrLedgerIO, "the ledger file is in use by another process")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// unlockFile releases the lock (closing the handle releases it).
func unlockFile(f *os.File) error { return f.Close() }

// syncDir is a no-op: Windows has no directory fsync; NTFS journals the
// rename itself.
func syncDir(string) error { return nil }

// isNoSpace reports whether err says the disk (or a quota) has no room for
// more bytes.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}
