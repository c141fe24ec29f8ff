//go:build unix && !(linux || darwin || freebsd || netbsd || openbsd || dragonfly || illumos)

package mirror

import (
	"os"

	"golang.org/x/sys/unix"
)

// lockFile is the fcntl lock (fcntlLock) where the system has no flock
// (Solaris, AIX; illumos has one, syncowner_flock.go): the process's, so
// that two syncs of one spool folder in one process are kept apart only
// by a Syncer they share (docs/SPEC-DECISIONS.md MIRROR-24).
func lockFile(f *os.File) (busy bool, err error) { return fcntlLock(f) }

// openNoFollow makes an open fail on a link in the last place of a path
// (openPart).
const openNoFollow = unix.O_NOFOLLOW
