//go:build linux

package regfile

import (
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CreateUnnamed creates a new file in dir for writing that has no name
// (O_TMPFILE): a process killed before LinkUnnamed leaves nothing behind.
// Its mode is mode less the umask, as a file created at its final name
// would have. Only where /proc is the proc file system (LinkUnnamed links
// through it), and where the kernel and dir's file system can make such
// a file; elsewhere it is ErrNoUnnamed and nothing was created.
func CreateUnnamed(dir string, mode os.FileMode) (*os.File, error) {
	return createUnnamed(dir, mode, procSelfFD)
}

// createUnnamed is CreateUnnamed with /proc/self/fd at proc (procSelfFD;
// a test's).
func createUnnamed(dir string, mode os.FileMode, proc string) (*os.File, error) {
	pd, err := procDir(proc)
	if err != nil {
		return nil, ErrNoUnnamed
	}
	unix.Close(pd)
	var fd int
	for {
		fd, err = unix.Open(dir, unix.O_TMPFILE|unix.O_WRONLY|unix.O_CLOEXEC, uint32(mode.Perm()))
		if err != unix.EINTR {
			break
		}
	}
	switch err {
	case nil:
		return os.NewFile(uintptr(fd), dir), nil
	case unix.EOPNOTSUPP, unix.EISDIR, unix.EINVAL, unix.ENOSYS:
		// A kernel without O_TMPFILE takes the flag for O_DIRECTORY
		// (EISDIR); a file system without it is EOPNOTSUPP.
		return nil, ErrNoUnnamed
	}
	return nil, &os.PathError{Op: "open", Path: dir, Err: err}
}

// LinkUnnamed gives f, a complete, synced file from CreateUnnamed, the
// name out, never replacing a file there: linkat of /proc/self/fd/N
// (AT_SYMLINK_FOLLOW, which links the file itself) fails when anything is
// at out, a link too, never followed. A name taken is an error wrapping
// fs.ErrExist; f stays open and unnamed (the caller closes it, and it is
// gone). Syncing the folder is the caller's (SyncDir).
func LinkUnnamed(f *os.File, out string) error {
	return linkUnnamed(f, out, procSelfFD)
}

// linkUnnamed is LinkUnnamed with /proc/self/fd at proc (procSelfFD; a
// test's).
func linkUnnamed(f *os.File, out, proc string) error {
	pd, err := procDir(proc)
	if err != nil {
		return &os.LinkError{Op: "link", Old: f.Name(), New: out, Err: err}
	}
	defer unix.Close(pd)
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			lerr = unix.Linkat(pd, strconv.Itoa(int(fd)), unix.AT_FDCWD, out, unix.AT_SYMLINK_FOLLOW)
			if lerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	switch lerr {
	case nil:
		return nil
	case unix.EEXIST:
		return errTaken(out)
	}
	return &os.LinkError{Op: "link", Old: f.Name(), New: out, Err: lerr}
}
