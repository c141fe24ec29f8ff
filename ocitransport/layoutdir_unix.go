//go:build unix

package ocitransport

import (
	"errors"
	"os"
	"syscall"
)

// folderOnlyPath is folderOnly for a path the system resolves (the
// layout's root as the operator named it, a tar's folder): "p/." resolves
// only where p is a folder, so a FIFO or a device put at p is refused,
// never opened nor waited on.
func folderOnlyPath(p string) string { return p + "/." }

// syncFolder makes the names made or removed in the folder open as f
// durable (fsync). A folder whose file system cannot sync it (fsync's
// EINVAL) is taken as is, as regfile.SyncDir does.
func syncFolder(f *os.File) error {
	err := f.Sync()
	if errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}

// removeEmptyFolder removes the folder p when it is empty (rmdir): never a
// file, a link or a folder with anything in it put at p meanwhile.
func removeEmptyFolder(p string) error { return syscall.Rmdir(p) }
