//go:build unix && !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package mirror

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lockFile takes an exclusive fcntl lock on the whole of f, never
// waiting, where the system has no flock (Solaris, illumos, AIX): busy
// when another process holds one. The lock goes with the process, and
// with any close of the file by it: lockSpool opens the file once. A file
// system that does not lock files is errNoLocks.
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
