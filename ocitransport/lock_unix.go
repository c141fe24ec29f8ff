//go:build unix

package ocitransport

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"

	"golang.org/x/sys/unix"
)

// tryLockFile takes the lock of the layout whose root folder is top: an
// exclusive flock on its lock file LayoutLockFile (created when missing,
// never through a symbolic link, in the very folder held), which the
// system releases when the process ends, killed or not. ok is false when
// another holds it. The file is opened read-only: flock needs no write
// access, so a lock file another user of a shared layout folder created
// (mode 0644, theirs) still serves every user who may replace
// index.json; O_NONBLOCK keeps a FIFO planted at the name from hanging
// the open.
func tryLockFile(top *layoutDir) (unlock func(), ok bool, err error) {
	f, err := openLockFile(top)
	if err != nil {
		return nil, false, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		f.Close()
		return nil, false, nil
	}
	if err != nil {
		f.Close()
		return nil, false, err
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true, nil
}

// openLockFile opens (creates) the lock file in top, relative to the
// descriptor of the very folder held (openat on it: the layout's path is
// not looked up again, and a link at the name is never followed).
func openLockFile(top *layoutDir) (*os.File, error) {
	const flag = unix.O_RDONLY | unix.O_CREAT | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	d, err := top.root.Open(".")
	if err != nil {
		return nil, err
	}
	defer d.Close()
	for {
		fd, err := unix.Openat(int(d.Fd()), LayoutLockFile, flag, 0o644)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "open", Path: LayoutLockFile, Err: err}
		}
		return os.NewFile(uintptr(fd), filepath.Join(top.root.Name(), LayoutLockFile)), nil
	}
}

// tryLockFolder takes an exclusive flock on the folder open as d without
// waiting, held until d is closed (or the process ends, killed or not):
// a tar destination's temporary layout folder while it is in use
// (openTarDestination). ok is false with a nil error when another
// holds it; an error says no lock can be taken here (then only the
// folder's age tells, removeStaleTarTemps).
func tryLockFolder(d *os.File) (ok bool, err error) {
	for {
		err = syscall.Flock(int(d.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}
