//go:build !linux

package regfile

import "os"

// descriptorOf: no proc file system here whose magic links a name could
// pass through. /dev/fd/N, where there is one (fdescfs), is a character
// device, refused as not a regular file (docs/SPEC-DECISIONS.md
// CLI-105): this process's descriptors are written with `-o -` there.
func descriptorOf(string) (pid, fd int, ok bool) { return 0, 0, false }

// ownDescriptor is never called where descriptorOf finds nothing.
func ownDescriptor(string, int) (*os.File, error) { return nil, ErrNotStream }
