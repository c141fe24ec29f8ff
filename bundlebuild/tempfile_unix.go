//go:build unix

package bundlebuild

import (
	"os"
	"syscall"
	"time"
)

// staleAge: where locks are seen, a minute covers the moment between a
// temporary file's creation and its lock.
func staleAge() time.Duration { return StaleTempAge }

func lockTemp(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

func tryLockTemp(f *os.File) bool {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil
}

func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
