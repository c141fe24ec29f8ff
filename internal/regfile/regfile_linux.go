//go:build linux

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// procFD is where a descriptor is opened again; tests point it where
// nothing is, to take openByName.
var procFD = "/proc/self/fd/"

// openPlace looks p up once: O_PATH gives a descriptor of what is there
// without opening it (no driver runs, a FIFO is not joined) and following
// no link; fstat examines that descriptor; only a regular file is opened,
// through /proc/self/fd, which opens that very inode whatever was put in
// its name since. Without /proc it falls back to openByName.
func openPlace(p place) (*os.File, fs.FileInfo, error) {
	pf, err := p.open(unix.O_PATH | unix.O_NOFOLLOW)
	if err != nil {
		return nil, nil, err
	}
	defer pf.Close()
	seen, err := pf.Stat()
	if err != nil {
		return nil, nil, err
	}
	if !seen.Mode().IsRegular() {
		return nil, nil, ErrNotRegular
	}
	f, err := os.OpenFile(procFD+strconv.Itoa(int(pf.Fd())), os.O_RDONLY|NoWait, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return openByName(p)
	}
	if err != nil {
		return nil, nil, err
	}
	return keepExamined(f, seen)
}
