//go:build unix

package keyfile

import (
	"errors"
	"os"
	"syscall"
)

// openNoWait opens a key file without blocking: a FIFO put in a key file's
// place opens at once and is then refused as not a regular file.
const openNoWait = syscall.O_NONBLOCK

// syncDir makes a new name in dir durable. A folder whose file system
// cannot sync it (EINVAL) is taken as is.
func syncDir(dir string) error {
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
