//go:build linux

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// errNoProc: the folder through which a descriptor is opened again
// (procSelfFD, or a test's) is absent or is not the proc file system, so
// a descriptor cannot be opened again through it.
var errNoProc = errors.New("regfile: no proc file system")

// openPlace looks p up once: O_PATH gives a descriptor of what is there
// without opening it (no driver runs, a FIFO is not joined) and following
// no link; fstat examines that descriptor; only a regular file is opened,
// through /proc/self/fd, which opens that very inode whatever was put in
// its name since. Without /proc, or where /proc is not the proc file
// system (a plain folder in a chroot, whose entries anyone who can write
// it may plant), it falls back to openByName. proc is where /proc/self/fd
// is (procSelfFD; a test's).
func openPlace(p place, proc string) (*os.File, fs.FileInfo, error) {
	pf, err := p.open(unix.O_PATH | unix.O_NOFOLLOW)
	if err != nil {
		return nil, nil, err
	}
	return openExamined(pf, false, proc, func() (*os.File, fs.FileInfo, error) { return openByName(p) })
}

// openExamined is openPlace and openStream once pf, an O_PATH descriptor
// of what is at the name, is open; it closes pf. fstat examines pf; only
// a regular file, or a pipe when pipes is set, is opened, through
// /proc/self/fd (proc): a regular file without waiting (reopen), then kept only
// when it is the file examined (keepExamined), a pipe with an open that
// waits for a writer. Without procfs (errNoProc) it is byName's answer.
// Errors name pf's name, as the files opened do (not /proc/self/fd/N).
func openExamined(pf *os.File, pipes bool, proc string, byName func() (*os.File, fs.FileInfo, error)) (*os.File, fs.FileInfo, error) {
	defer pf.Close()
	seen, err := pf.Stat()
	if err != nil {
		return nil, nil, err
	}
	regular := seen.Mode().IsRegular()
	if !regular && !(pipes && isPipe(seen)) {
		return nil, nil, ErrNotRegular
	}
	var fd int
	if regular {
		fd, err = reopen(pf, proc)
	} else {
		fd, err = reopenWith(pf, 0, proc) // waits for a writer
	}
	if errors.Is(err, errNoProc) {
		return byName()
	}
	if err != nil {
		return nil, nil, &fs.PathError{Op: "open", Path: pf.Name(), Err: err}
	}
	f := os.NewFile(uintptr(fd), pf.Name())
	if regular {
		return keepExamined(f, seen)
	}
	return f, seen, nil
}

// reopen opens the inode pf (an O_PATH descriptor) names for reading
// through proc, without waiting (a lease is not waited for), then makes
// it blocking; only when proc is the proc file system (fstatfs of the
// very folder the open starts from): anywhere else it is errNoProc and
// nothing is opened.
func reopen(pf *os.File, proc string) (int, error) {
	fd, err := reopenWith(pf, unix.O_NONBLOCK, proc)
	if err != nil {
		return -1, err
	}
	// The inode is the regular file examined: it blocks from here on, so
	// the *os.File made of it is an ordinary one, outside Go's poller.
	if err := unix.SetNonblock(fd, false); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// reopenWith opens the inode pf (an O_PATH descriptor) names for reading
// through proc, with flag added (O_NONBLOCK, or none: a pipe's open
// then waits for a writer); only when proc is the proc file system,
// else errNoProc and nothing is opened.
func reopenWith(pf *os.File, flag int, proc string) (int, error) {
	dir, err := procDir(proc)
	if err != nil {
		return -1, err
	}
	defer unix.Close(dir)
	rc, err := pf.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd, oerr := -1, error(nil)
	if err := rc.Control(func(pfd uintptr) {
		for {
			fd, oerr = unix.Openat(dir, strconv.Itoa(int(pfd)), unix.O_RDONLY|unix.O_CLOEXEC|flag, 0)
			if oerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return -1, err
	}
	if oerr != nil {
		return -1, oerr
	}
	return fd, nil
}

// procDir opens proc (procSelfFD; a test's) with O_PATH only when it is
// the proc file system (fstatfs of the very folder a lookup starts
// from); anywhere else, or where it is absent, it is errNoProc and
// nothing is left open.
func procDir(proc string) (int, error) {
	dir, err := unix.Open(proc, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, errNoProc
	}
	var sfs unix.Statfs_t
	if err := unix.Fstatfs(dir, &sfs); err != nil || sfs.Type != unix.PROC_SUPER_MAGIC {
		unix.Close(dir)
		return -1, errNoProc
	}
	return dir, nil
}

// openStream looks path up once, its links followed (the operator's, and
// /dev/fd/N's, which lead to a shell's pipe): O_PATH gives a descriptor
// of what is there without opening it, fstat examines it, and only a
// regular file or a pipe is opened, through /proc/self/fd, so that very
// inode is opened whatever was put in the name since: a regular file
// without waiting (then blocking, as openPlace), a pipe with an open that
// waits for a writer and a descriptor that blocks (OpenStream). Without
// /proc, or where it is not procfs, it falls back to openStreamByName.
// proc is where /proc/self/fd is (procSelfFD; a test's).
func openStream(path, proc string) (*os.File, fs.FileInfo, error) {
	pf, err := os.OpenFile(path, unix.O_PATH, 0)
	if err != nil {
		return nil, nil, err
	}
	return openExamined(pf, true, proc, func() (*os.File, fs.FileInfo, error) { return openStreamByName(path, proc) })
}
