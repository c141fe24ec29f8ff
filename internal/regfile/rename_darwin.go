//go:build darwin

package regfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// renameNew renames tmp to out in one step that fails when anything is at
// out (renamex_np RENAME_EXCL); a file system that cannot (ENOTSUP,
// EINVAL) takes checkRename.
func renameNew(tmp, out string) error {
	err := unix.RenamexNp(tmp, out, unix.RENAME_EXCL)
	switch err {
	case nil:
		return nil
	case unix.EEXIST:
		return errTaken(out)
	case unix.ENOTSUP, unix.EINVAL:
		return checkRename(tmp, out)
	}
	return &os.LinkError{Op: "rename", Old: tmp, New: out, Err: err}
}
