//go:build unix

package bundlebuild

import "syscall"

// openNoWait opens a source file without blocking: a FIFO put in a file's
// place opens at once and is then refused as not a regular file.
const openNoWait = syscall.O_NONBLOCK
