//go:build !unix

package mirror

import "os"

// ownedByAnother reports whether fi is owned by another user: not judged
// where the file's owner is not a user id (Windows).
func ownedByAnother(os.FileInfo) bool { return false }

// linkedElsewhere reports whether the spool file fi has another name:
// not judged where the system does not say (Windows), as ownedByAnother.
func linkedElsewhere(os.FileInfo) bool { return false }

// openNonBlock is 0 where an open of a file does not wait for another
// party (no FIFO in a folder there).
const openNonBlock = 0
