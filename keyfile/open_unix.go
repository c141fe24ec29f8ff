//go:build unix

package keyfile

import "syscall"

// openNoWait opens a key file without blocking: a FIFO put in a key file's
// place opens at once and is then refused as not a regular file.
const openNoWait = syscall.O_NONBLOCK
