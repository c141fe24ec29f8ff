//go:build unix

package mirror

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// fcntlLock takes an exclusive fcntl lock on the whole of f, never
// waiting: busy when another process holds one. It is the spool lock
// where the system has no flock (Solaris, AIX: syncowner_fcntlonly.go),
// and on the others only in tests. The lock is the process's, not the
// open file's: it goes with the process, and with any close of the file
// by it, and a second fcntlLock in the same process is granted, not busy.
// So a Syncer holds a spool folder within the process before its lock
// file is opened (Syncer.lockSpool): a second sync through it never opens
// nor closes that file while the first holds it (docs/SPEC-DECISIONS.md
// MIRROR-23, amended; MIRROR-24). A file system that does not lock files
// is errNoLocks.
func fcntlLock(f *os.File) (busy bool, err error) {
	lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0}
	err = unix.FcntlFlock(f.Fd(), unix.F_SETLK, &lk)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EACCES):
		return true, nil
	case errors.Is(err, unix.ENOLCK), errors.Is(err, unix.EOPNOTSUPP), errors.Is(err, unix.ENOTSUP):
		return false, errNoLocks
	}
	return false, err
}
