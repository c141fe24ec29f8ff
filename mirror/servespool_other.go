//go:build !(unix || windows)

package mirror

import "errors"

// ErrNoFileLocks is the cause of ServeSpool's refusal where the system
// does not lock files (js, wasip1, plan9): a folder of a running mirror
// could not be told from a killed one's (docs/SPEC-DECISIONS.md
// MIRROR-34, MIRROR-35).
var ErrNoFileLocks = errors.New("this system does not lock files: give the mirror a spool folder of its own")

// SpoolBaseError is ServeSpool's refusal of a base folder through which
// another user could redirect or replace what the mirror writes and
// removes (never returned here: ServeSpool refuses every base).
type SpoolBaseError struct {
	Path string
	Why  string
}

func (e *SpoolBaseError) Error() string { return e.Path + " " + e.Why }

// ServeSpool refuses where the system has no file locks (js, wasip1,
// plan9): ErrNoFileLocks. Give Options.SpoolDir a folder of its own there.
func ServeSpool(base string) (dir string, release func(), err error) {
	return "", nil, ErrNoFileLocks
}
