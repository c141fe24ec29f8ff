package ocitransport

import (
	"os"

	"golang.org/x/sys/unix"
)

// statfsType is the f_type statfs gives for the file system of the open
// file d (tests give the value of a file system they cannot mount
// through Options.statfs instead).
func statfsType(d *os.File) (int64, error) {
	var s unix.Statfs_t
	if err := unix.Fstatfs(int(d.Fd()), &s); err != nil {
		return 0, err
	}
	return int64(s.Type), nil
}
