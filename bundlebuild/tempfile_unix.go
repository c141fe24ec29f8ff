//go:build unix

package bundlebuild

import (
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
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

// removeFolderEntries removes the plain files of the folder open as d,
// listed (plainEntries, within budget) and unlinked relative to that
// descriptor (never by path), or nothing when it holds anything else:
// then it is not one of ours.
func removeFolderEntries(d *os.File, budget *entryBudget) bool {
	entries, ok := plainEntries(d, budget)
	if !ok {
		return false
	}
	fd := int(d.Fd())
	for _, e := range entries {
		if unix.Unlinkat(fd, e.Name(), 0) != nil {
			return false
		}
	}
	return true
}

// removeDir removes the empty folder p; a link put in its place is not
// followed (rmdir refuses it).
func removeDir(p string) error { return unix.Rmdir(p) }
