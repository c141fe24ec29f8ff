//go:build !unix

package keyfile

// openNoWait: opening a file does not block here.
const openNoWait = 0

// syncDir: a folder cannot be synced here (Windows opens one read-only);
// the new name is as durable as the file system makes it.
func syncDir(string) error { return nil }
