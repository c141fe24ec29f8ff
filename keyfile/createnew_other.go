//go:build !windows

package keyfile

import "os"

// createNew creates the file name for writing, exclusively (a file or a
// link at name is never opened: fs.ErrExist), with mode less the umask.
func createNew(name string, mode os.FileMode) (*os.File, error) {
	return os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
}
