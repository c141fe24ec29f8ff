//go:build !windows && !unix

package keyfile

import (
	"io/fs"
	"os"
)

// judgeOpenFile refuses a file whose mode gives group or others any
// access (ErrInsecureKeyFile). Where files have no owner this package can
// read (neither Unix nor Windows), the mode alone is judged.
func judgeOpenFile(_ *os.File, st fs.FileInfo, what string) error {
	return judgeMode(st.Mode().Perm(), what)
}
