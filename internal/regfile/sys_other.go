//go:build !unix

package regfile

import (
	"errors"
	"os"
)

// NoWait: opening a file does not block here.
const NoWait = 0

// noFollow: there is no O_NOFOLLOW here.
const noFollow = 0

// dirOnly: no such flag here; OpenFolder checks what it opened.
const dirOnly = 0

// notDir: an open here does not refuse what is no folder.
var notDir = errNone

// errNone is an error no open returns.
var errNone = errors.New("regfile: no error")

// SyncDir: a folder cannot be synced here (Windows opens one read-only);
// the new name is as durable as the file system makes it.
func SyncDir(string) error { return nil }

// blocking: a file is never opened without waiting here.
func blocking(*os.File) error { return nil }

// OwnedBySelf: a file's owner cannot be read from what stat shows here;
// always false, so nothing is taken as this process's own.
func OwnedBySelf(os.FileInfo) bool { return false }

// ForeignOwner: a file's owner cannot be read from what stat shows here;
// never foreign, so ownership refuses nothing (the mode, where it means
// anything, still does).
func ForeignOwner(os.FileInfo) (uint32, bool) { return 0, false }

// modeBitsAreRights: the mode bits do not say who may write a file here
// (Windows reports 0666 for every writable one); OthersMayWrite refuses
// nothing.
const modeBitsAreRights = false

// pipesAreFiles: a pipe here is not a file OpenStream opens.
const pipesAreFiles = false
