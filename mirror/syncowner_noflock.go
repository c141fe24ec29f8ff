//go:build !(unix || windows)

package mirror

import (
	"errors"
	"os"
)

// lockSpool refuses where the system has no file locks (js, wasip1,
// plan9): a sync that writes is not run unlocked (docs/SPEC-DECISIONS.md
// MIRROR-23).
func lockSpool(string, func(*os.File) (bool, error)) (unlock func(), busy bool, err error) {
	return nil, false, errors.New("this system does not lock files: a sync that writes is refused here")
}

// openNoFollow is 0 where the system's flag is not at hand: openPart
// still removes a link it finds, but a link put there between its check
// and its open is followed.
const openNoFollow = 0
