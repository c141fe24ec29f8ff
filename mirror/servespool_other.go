//go:build !(unix || windows)

package mirror

import "errors"

// ServeSpool refuses where the system has no file locks (js, wasip1,
// plan9): a folder of a running mirror could not be told from a killed
// one's (docs/SPEC-DECISIONS.md MIRROR-34). Give Options.SpoolDir a folder
// of its own there.
func ServeSpool(base string) (dir string, release func(), err error) {
	return "", nil, errors.New("this system does not lock files: give the mirror a spool folder of its own")
}
