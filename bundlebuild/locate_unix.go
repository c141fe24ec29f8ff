//go:build unix

package bundlebuild

import "syscall"

// openDirOnly makes the open of a folder LocateParts searches fail
// (ENOTDIR) when something else was put in its place: a device is never
// opened, so its driver never runs.
const openDirOnly = syscall.O_DIRECTORY
