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
