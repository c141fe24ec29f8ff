//go:build unix

package ocitransport

import (
	"os"
	"syscall"
)

// extraLinks says whether the file st describes has another name (a hard
// link) than the one it was found by.
func extraLinks(st os.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && s.Nlink > 1
}
