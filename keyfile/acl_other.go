//go:build !windows

package keyfile

import (
	"io/fs"
	"os"
)

// judgeOpenFile refuses a file whose mode gives group or others any
// access (ErrInsecureKeyFile): here the mode bits are the access rights.
func judgeOpenFile(_ *os.File, st fs.FileInfo, what string) error {
	if st.Mode().Perm()&0o077 != 0 {
		return fail(ErrInsecureKeyFile, "%s is readable or writable by group or others (mode %04o); run chmod 600 on it", what, st.Mode().Perm())
	}
	return nil
}
