//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly || illumos

package mirror

import (
	"errors"
	"os"
	"syscall"
)

// lockFile takes an exclusive flock on f, never waiting: busy when
// another open of the file holds one, in this process or another (the
// lock is the open file's; illumos's flock too, unlike an fcntl lock). A file system that does not lock files
// (ENOLCK, EOPNOTSUPP: some network and FUSE file systems) is errNoLocks.
func lockFile(f *os.File) (busy bool, err error) {
	err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	switch {
	case err == nil:
		return false, nil
	case errors.Is(err, syscall.EWOULDBLOCK):
		return true, nil
	case errors.Is(err, syscall.ENOLCK), errors.Is(err, syscall.EOPNOTSUPP), errors.Is(err, syscall.ENOTSUP):
		return false, errNoLocks
	}
	return false, err
}

// openNoFollow makes an open fail on a link in the last place of a path
// (openPart).
const openNoFollow = syscall.O_NOFOLLOW
