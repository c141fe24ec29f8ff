//go:build unix

package regfile

import (
	"errors"
	"os"
	"syscall"
)

// NoWait is the open flag that keeps an open from waiting: a FIFO opens
// at once (and is then refused as not a regular file) instead of blocking
// until a writer comes. Zero where opening never blocks.
const NoWait = syscall.O_NONBLOCK

// noFollow makes an open fail (ELOOP) on a link in the last element.
const noFollow = syscall.O_NOFOLLOW

// dirOnly makes an open fail (ENOTDIR, notDir) on anything but a folder:
// a device is never opened, so its driver never runs.
const dirOnly = syscall.O_DIRECTORY

// notDir is the error of an open with dirOnly of something else.
const notDir = syscall.ENOTDIR

// SyncDir makes a new name in dir durable (fsync of the folder). A folder
// whose file system cannot sync it (EINVAL) is taken as is.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}
