//go:build !linux

package ocitransport

import (
	"errors"
	"os"
)

// statfsType: no f_type is read here (statfs differs on each system), so
// fsModesOf says modesUnknown: the stale cleaner judges the mode.
func statfsType(*os.File) (int64, error) {
	return 0, errors.New("no statfs f_type on this system")
}
