//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package mirror

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
)

// lockSpool takes the spool folder's lock for one sync (an exclusive flock
// on spoolLockName in it, mode 0600 and never through a link, so that
// only the sync's user can open it to hold it; never waiting), and returns
// what releases it (and removes the file); busy when another sync holds
// it. The lock goes with the process: a file a killed sync left is taken
// over (docs/SPEC-DECISIONS.md MIRROR-18).
func lockSpool(dir string) (unlock func(), busy bool, err error) {
	p := filepath.Join(dir, spoolLockName)
	for try := 0; try < 3; try++ {
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|syscall.O_NOFOLLOW, 0o600)
		if err != nil {
			return nil, false, err
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, true, nil
			}
			return nil, false, err
		}
		// The sync that held it may have removed the file between this
		// open and this lock: the lock counts only on the file the name
		// still names.
		fi, err1 := f.Stat()
		pi, err2 := os.Lstat(p)
		if err1 == nil && err2 == nil && os.SameFile(fi, pi) {
			return func() { os.Remove(p); f.Close() }, false, nil
		}
		f.Close()
	}
	return nil, true, nil
}

// openNoFollow makes an open fail on a link in the last place of a path
// (openPart).
const openNoFollow = syscall.O_NOFOLLOW
