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

// extraLinks says whether the file st describes has another name (a hard
// link): not known here (os.FileInfo carries no link count off Unix), so
// false; index.json is still written by rename, never through the link.
func extraLinks(os.FileInfo) bool { return false }
