//go:build unix

package bundlebuild

import (
	"io/fs"
	"syscall"
)

// hasOtherNames says whether the file info describes has another name (a
// hard link) than the one the walk found it by.
func hasOtherNames(info fs.FileInfo) bool {
	st, ok := info.Sys().(*syscall.Stat_t)
	return ok && st.Nlink > 1
}
