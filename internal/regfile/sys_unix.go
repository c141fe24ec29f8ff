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

// SyncDir makes a new name in dir durable (fsync of the folder). The name
// is opened only as a folder (OpenFolder): a FIFO or a device put in its
// place is never opened, and is ErrNotFolder. A folder whose file system
// cannot sync it (fsync's EINVAL) is taken as is.
func SyncDir(dir string) error {
	d, err := OpenFolder(dir, FollowLinks)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}

// blocking clears NoWait (O_NONBLOCK) on f, a regular file opened
// without waiting.
func blocking(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) { serr = syscall.SetNonblock(int(fd), false) }); err != nil {
		return err
	}
	return serr
}

// ForeignOwner reports the owner of st (an lstat or fstat of a file or
// folder) when it is neither this process's effective user nor root: a
// user who may rewrite, replace or chmod what the process trusts there
// (a config file, a spool folder), whatever the mode says.
func ForeignOwner(st os.FileInfo) (uid uint32, foreign bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return s.Uid, int64(s.Uid) != int64(os.Geteuid()) && s.Uid != 0
}

// OwnedBySelf reports whether st (an lstat or fstat of a file) belongs to
// the effective user of this process.
func OwnedBySelf(st os.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && int64(s.Uid) == int64(os.Geteuid())
}

// modeBitsAreRights: a file's owner and mode bits say who may write it
// here (OthersMayWrite).
const modeBitsAreRights = true

// pipesAreFiles: a FIFO is opened and read as a file here (OpenStream).
const pipesAreFiles = true
