//go:build !unix

package ocitransport

import "os"

// folderOnlyPath is p itself here: no FIFO or device is found by a path
// in a folder's place (Windows keeps named pipes and devices apart from
// the file system's folders), and os.OpenRoot opens only a folder.
func folderOnlyPath(p string) string { return p }

// syncFolder: a folder cannot be synced here (Windows opens one
// read-only); its names are as durable as the file system makes them, as
// regfile.SyncDir says.
func syncFolder(*os.File) error { return nil }

// removeEmptyFolder removes the folder p when it is empty: os.Remove
// removes no folder with anything in it, but here it would remove a file
// put at p between the caller's check and the call (no rmdir of its own
// on every system this file builds for).
func removeEmptyFolder(p string) error { return os.Remove(p) }
