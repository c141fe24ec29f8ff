//go:build linux

package ocitransport

import (
	"errors"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// procSelfFD is the folder a descriptor of this process is named in.
const procSelfFD = "/proc/self/fd/"

// openLayoutDir opens the folder rel of the layout at top without
// following a symbolic link below top: top is opened as the operator
// named it (regfile.OpenFolder, links in its path followed), then each
// element of rel relative to the folder opened before it (walkLayoutDir).
// Without the proc file system it falls back to openLayoutPathDir.
func openLayoutDir(top, rel string, create bool) (*layoutDir, error) {
	els, err := layoutElements(rel)
	if err != nil {
		return nil, err
	}
	if !procIsProcfs() {
		return openLayoutPathDir(top, rel, create)
	}
	d, err := regfile.OpenFolder(top, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotFolder) {
		return nil, errLayoutLink()
	}
	if err != nil {
		return nil, err
	}
	defer d.Close()
	return walkLayoutDir(d, els, create)
}

// sub opens the folder rel below d as openLayoutDir does below the
// layout's root, starting from d itself: d's path is not looked up again.
func (d *layoutDir) sub(rel string, create bool) (*layoutDir, error) {
	els, err := layoutElements(rel)
	if err != nil {
		return nil, err
	}
	if d.fd == nil {
		return d.subByPath(rel, create)
	}
	return walkLayoutDir(d.fd, els, create)
}

// walkLayoutDir opens each element of els relative to the folder opened
// before it, from start (openat O_NOFOLLOW|O_DIRECTORY|O_NONBLOCK: a
// link, a FIFO, a device or a file there is refused without being opened,
// errLayoutLink); with create, a missing element is made. The folder
// reached is held by its own descriptor, and handed out as an os.Root
// through that descriptor's name in the proc file system, so what is
// later opened in it is in that very folder. start is left open.
func walkLayoutDir(start *os.File, els []string, create bool) (*layoutDir, error) {
	if len(els) == 0 {
		els = []string{"."}
	}
	fd := int(start.Fd())
	var d *os.File
	for _, el := range els {
		next, err := openAt(fd, el, create)
		if d != nil {
			d.Close()
		}
		if err != nil {
			return nil, err
		}
		d = os.NewFile(uintptr(next), start.Name()+"/"+el)
		fd = next
	}
	root, err := os.OpenRoot(procSelfFD + strconv.Itoa(fd))
	if err != nil {
		d.Close()
		return nil, err
	}
	return &layoutDir{root: root, fd: d}, nil
}

// openAt opens the folder el in the folder parent, following no link and
// opening nothing but a folder; with create, a missing one is made.
func openAt(parent int, el string, create bool) (int, error) {
	const flag = unix.O_RDONLY | unix.O_DIRECTORY | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_CLOEXEC
	made := false
	for {
		fd, err := unix.Openat(parent, el, flag, 0)
		switch {
		case err == nil:
			return fd, nil
		case err == unix.EINTR:
		case err == unix.ENOENT && create && !made:
			if err := unix.Mkdirat(parent, el, 0o755); err != nil && err != unix.EEXIST {
				return -1, &os.PathError{Op: "mkdir", Path: el, Err: err}
			}
			made = true
		case err == unix.ELOOP || err == unix.ENOTDIR:
			return -1, errLayoutLink()
		default:
			return -1, &os.PathError{Op: "open", Path: el, Err: err}
		}
	}
}

// procIsProcfs says whether procSelfFD is the proc file system, through
// which a descriptor's folder can be opened again (a plain folder at
// /proc, in a chroot, could hold anything).
func procIsProcfs() bool {
	var sfs unix.Statfs_t
	return unix.Statfs(procSelfFD, &sfs) == nil && sfs.Type == unix.PROC_SUPER_MAGIC
}
