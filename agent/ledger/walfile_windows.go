//go:build windows

package ledger

import (
	"errors"
	"os"
	"syscall"

	"golang.org/x/sys/windows"
)

// tryLock takes an exclusive LockFileEx lock on f's first byte without
// waiting; held reports that another process holds it.
func tryLock(f *os.File) (held bool, err error) {
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, new(windows.Overlapped))
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return true, nil
	default:
		return false, err
	}
}

// tryLockLog takes no lock on the log file itself here: a LockFileEx
// lock is mandatory, so other processes (a backup) could no longer read
// the bytes it covers. The lock file stays the only lock, as before
// (docs/SPEC-DECISIONS.md AGENT-50).
func tryLockLog(*os.File) (held bool, err error) { return false, nil }

// isNoSpace reports whether err says the disk (or a quota) has no room for
// more bytes.
func isNoSpace(err error) bool {
	return errors.Is(err, syscall.ENOSPC) || errors.Is(err, windows.ERROR_DISK_FULL) || errors.Is(err, windows.ERROR_HANDLE_DISK_FULL)
}

// logWriters: the mode bits mean nothing here (a file's ACL decides) and
// the owner cannot be read from what stat shows; nothing is refused.
func logWriters(os.FileInfo, string) error { return nil }

// lockNoFollow: the open has no such flag here; openLock's look before it
// refuses a link already at the name.
const lockNoFollow = 0

// logFolder: the mode bits mean nothing here and the owner is not in what
// stat shows; no folder is refused.
func logFolder(string) error { return nil }
