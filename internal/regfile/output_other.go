//go:build !linux

package regfile

import "os"

// descriptorOf: no proc file system here whose magic links a name could
// pass through; /dev/fd/N, where there is one, is a character device
// (fdescfs), an OutputStream already.
func descriptorOf(string) (pid, fd int, ok bool) { return 0, 0, false }

// ownDescriptor is never called where descriptorOf finds nothing.
func ownDescriptor(string, int) (*os.File, error) { return nil, ErrNotStream }
