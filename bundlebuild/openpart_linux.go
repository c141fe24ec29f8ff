//go:build linux

package bundlebuild

import (
	"errors"
	"os"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// openPart opens the regular file target (a part's path, its links
// resolved) and returns it with what was examined before it was opened;
// errNotRegular when target is anything else, which is then never opened
// (docs/SPEC-DECISIONS.md BUNDLE-12, BUNDLE-17). The name is
// looked up once: O_PATH gives a descriptor of what is there now without
// opening it (no driver runs, a FIFO is not joined) and following no link;
// fstat examines that descriptor; only a regular file is opened, through
// /proc/self/fd, which opens that very inode whatever was put in its
// name since. Without /proc the open falls back to openPartByPath.
func openPart(target string) (*os.File, os.FileInfo, error) {
	fd, err := unix.Open(target, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, &os.PathError{Op: "open", Path: target, Err: err}
	}
	pf := os.NewFile(uintptr(fd), target)
	defer pf.Close()
	seen, err := pf.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !seen.Mode().IsRegular() {
		return nil, nil, errNotRegular
	}
	f, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if errors.Is(err, os.ErrNotExist) {
		return openPartByPath(target)
	}
	if err != nil {
		return nil, nil, err
	}
	return f, seen, nil
}
