package mirror

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lockFile takes an exclusive lock on the first byte of f (LockFileEx),
// never waiting: busy when another process holds it. The system releases
// it with the handle, so with the process.
func lockFile(f *os.File) (busy bool, err error) {
	var ov windows.Overlapped
	err = windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_EXCLUSIVE_LOCK|windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, &ov)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, windows.ERROR_LOCK_VIOLATION):
		return true, nil
	case errors.Is(err, windows.ERROR_NOT_SUPPORTED), errors.Is(err, windows.ERROR_INVALID_FUNCTION):
		return false, errNoLocks
	}
	return false, err
}

// openNoFollow is 0 where the system's flag is not at hand: openPart
// still removes a link it finds, but a link put there between its check
// and its open is followed.
const openNoFollow = 0
