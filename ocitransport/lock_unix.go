//go:build unix

package ocitransport

import (
	"errors"
	"os"
	"syscall"
)

// tryLockFile takes the lock of the layout's lock file p: an exclusive
// flock on it (created when missing, never through a symbolic link), which
// the system releases when the process ends, killed or not. ok is false
// when another holds it.
func tryLockFile(p string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o644)
	if err != nil {
		return nil, false, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true, nil
}
