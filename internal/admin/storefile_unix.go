//go:build unix

package admin

import (
	"os"
	"strconv"
	"syscall"
)

// storeFileID names the file at path (a link followed, as the store's
// own open follows it) by its device and inode: the same store file
// reached by two paths (a link, a bind mount) has one name, and
// another store never has it (docs/SPEC-DECISIONS.md ADMIN-8).
func storeFileID(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", os.ErrInvalid
	}
	return strconv.FormatUint(uint64(s.Dev), 10) + ":" + strconv.FormatUint(uint64(s.Ino), 10), nil
}
