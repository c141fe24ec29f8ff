//go:build unix

package keyfile

import (
	"io/fs"
	"os"
	"syscall"
)

// judgeOpenFile judges the open file's owner and mode (st is f's
// FileInfo, read from the open file): judgeOwnerMode with this process's
// effective user. A FileInfo without an owner (not from a Unix stat)
// refuses the file: its owner cannot be judged.
func judgeOpenFile(_ *os.File, st fs.FileInfo, what string) error {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return fail(ErrInsecureKeyFile, "%s's owner cannot be read", what)
	}
	return judgeOwnerMode(uint32(s.Uid), uint32(os.Geteuid()), st.Mode().Perm(), what)
}
