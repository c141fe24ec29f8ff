//go:build unix

package mirror

import (
	"os"
	"syscall"
)

// ownedByAnother reports whether fi is owned by a user other than this
// process's effective user and root, who may then write it whatever its
// mode bits say (othersMayWrite). A file whose owner cannot be read is
// taken as another's.
func ownedByAnother(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return true
	}
	return st.Uid != uint32(os.Geteuid()) && st.Uid != 0
}

// linkedElsewhere reports whether the spool file fi has another name
// besides its own (a hard link): a file with another name is someone
// else's too, whatever its mode and owner say, and is neither written
// nor locked as the sync's (openSpoolFile, lockOthersMayOpen). A file
// whose link count cannot be read is taken as linked
// (docs/SPEC-DECISIONS.md MIRROR-25).
func linkedElsewhere(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return !ok || st.Nlink > 1
}

// openNonBlock makes an open of a FIFO return at once rather than wait
// for its other end (openSpoolFile); a regular file is read and written
// as without it.
const openNonBlock = syscall.O_NONBLOCK
