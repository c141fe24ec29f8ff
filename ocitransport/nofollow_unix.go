//go:build unix

package ocitransport

import (
	"errors"
	"os"
	"syscall"
)

// openNoFollow opens p for reading, refusing a symbolic link and anything
// but a regular file, without waiting: a FIFO put at p (by another user of
// a shared layout folder, after the layout was checked) opens at once and
// is then refused, where a blocking open would wait for a writer forever,
// under the layout's lock (docs/SPEC-DECISIONS.md OCI-15). O_NONBLOCK
// changes nothing for a regular file's reads.
func openNoFollow(p string) (*os.File, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = errors.New("not a regular file")
		}
		return nil, err
	}
	return f, nil
}

// extraLinks says whether the file st describes has another name (a hard
// link) than the one it was found by.
func extraLinks(st os.FileInfo) bool {
	s, ok := st.Sys().(*syscall.Stat_t)
	return ok && s.Nlink > 1
}
