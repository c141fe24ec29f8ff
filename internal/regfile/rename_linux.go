//go:build linux

package regfile

import (
	"os"

	"golang.org/x/sys/unix"
)

// renameNew renames tmp to out in one step that fails when anything is at
// out (renameat2 RENAME_NOREPLACE); a kernel or file system that cannot
// (EINVAL, ENOSYS, or EPERM where a seccomp filter refuses the call)
// takes checkRename.
func renameNew(tmp, out string) error {
	err := unix.Renameat2(unix.AT_FDCWD, tmp, unix.AT_FDCWD, out, unix.RENAME_NOREPLACE)
	switch err {
	case nil:
		return nil
	case unix.EEXIST:
		return errTaken(out)
	case unix.EINVAL, unix.ENOSYS, unix.EPERM:
		return checkRename(tmp, out)
	}
	return &os.LinkError{Op: "rename", Old: tmp, New: out, Err: err}
}
