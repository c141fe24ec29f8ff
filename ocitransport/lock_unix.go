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
// when another holds it. The file is opened read-only: flock needs no
// write access, so a lock file another user of a shared layout folder
// created (mode 0644, theirs) still serves every user who may replace
// index.json; O_NONBLOCK keeps a FIFO planted at the name from hanging
// the open.
func tryLockFile(p string) (unlock func(), ok bool, err error) {
	f, err := os.OpenFile(p, os.O_RDONLY|os.O_CREATE|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0o644)
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
