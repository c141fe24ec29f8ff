//go:build unix

package ocitransport

import (
	"os"
	"syscall"
)

// openNoFollow opens p for reading, refusing a symbolic link.
func openNoFollow(p string) (*os.File, error) {
	return os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW, 0)
}
