//go:build unix && !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || illumos)

package mirror

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive fcntl lock on the whole of f, never
// waiting, where the system has no flock (Solaris, AIX; illumos has one,
// syncowner_flock.go): busy when another process holds one. The lock is
// the process's, not the open file's: it goes with the process, and with
// any close of the file by it, and a second lockFile in the same process
// is granted, not busy. lockSpool opens the file once a sync, so one sync
// a process holds it soundly (the ampbundle CLI runs one); two syncs of
// one spool folder in one process are not kept apart here, and when
// either ends the other's lock goes with it (docs/SPEC-DECISIONS.md
// MIRROR-23, amended: left open). A file system that does not lock files
// is errNoLocks.
func lockFile(f *os.File) (busy bool, err error) {
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

// openNoFollow makes an open fail on a link in the last place of a path
// (openPart).
const openNoFollow = unix.O_NOFOLLOW
