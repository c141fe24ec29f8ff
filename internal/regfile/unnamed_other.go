//go:build !linux

package regfile

import "os"

// CreateUnnamed: there is no file without a name here (O_TMPFILE);
// always ErrNoUnnamed, and nothing is created.
func CreateUnnamed(string, os.FileMode) (*os.File, error) { return nil, ErrNoUnnamed }

// LinkUnnamed: CreateUnnamed makes no file here, so there is none to
// link.
func LinkUnnamed(f *os.File, out string) error {
	return &os.LinkError{Op: "link", Old: f.Name(), New: out, Err: ErrNoUnnamed}
}
