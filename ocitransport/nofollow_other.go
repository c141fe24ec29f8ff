//go:build !unix

package ocitransport

import (
	"errors"
	"os"
)

// openNoFollow opens p for reading, refusing a symbolic link (checked
// before the open where the system has no O_NOFOLLOW).
func openNoFollow(p string) (*os.File, error) {
	st, err := os.Lstat(p)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return os.Open(p)
}
