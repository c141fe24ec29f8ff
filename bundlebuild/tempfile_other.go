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

func openNoFollow(p string) (*os.File, error) { return os.Open(p) }
