//go:build !unix

package bundlebuild

import (
	"os"
	"time"
)

// staleTempAgeNoLock is the age after which a temporary file is taken as
// left by a killed run where no lock can show a live writer.
const staleTempAgeNoLock = 24 * time.Hour

func staleAge() time.Duration { return staleTempAgeNoLock }

func lockTemp(*os.File) error { return nil }

func tryLockTemp(*os.File) bool { return true }

// removeFolderEntries removes the plain files of the folder open as d
// (plainEntries, within budget), beneath that folder (os.Root: a link is
// removed, never followed), or nothing when it holds anything else.
func removeFolderEntries(d *os.File, budget *entryBudget) bool {
	entries, ok := plainEntries(d, budget)
	if !ok {
		return false
	}
	root, err := os.OpenRoot(d.Name())
	if err != nil {
		return false
	}
	defer root.Close()
	rst, err := root.Stat(".")
	dst, err2 := d.Stat()
	if err != nil || err2 != nil || !os.SameFile(rst, dst) {
		return false
	}
	for _, e := range entries {
		if root.Remove(e.Name()) != nil {
			return false
		}
	}
	return true
}

// removeDir removes the empty folder p.
func removeDir(p string) error { return os.Remove(p) }
