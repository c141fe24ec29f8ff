//go:build unix || windows

package mirror

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// lockSpool takes the spool folder's lock for one sync (an exclusive
// lock of the system, lockFile, on spoolLockName in it, mode 0600 and
// never through a link, so that only the sync's user can open it to hold
// it; never waiting), and returns what releases it (and removes the
// file, before it is closed, so that no sync locks a name then removed;
// on Windows the file stays, as one open there cannot be removed: the
// next sync takes it); busy when another sync holds it. lock takes the
// lock on the open file (lockFile, the system's, when nil). The lock goes
// with the process: a file a killed sync left is taken over, so it is
// never sticky. A file there that others may open (another user's, or
// readable or writable by group or others: lockOthersMayOpen), which only
// whoever may write the spool folder can have put there, is no lock of a
// sync: it is removed and made again, so that a user who holds a lock on
// it keeps no sync out (docs/SPEC-DECISIONS.md MIRROR-18, MIRROR-21,
// MIRROR-23). A name there that is no file the open could take (a
// folder, a link, a socket) is removed first (removeNotAFile,
// MIRROR-32). Syncer.lockSpool holds the folder within the process first
// (MIRROR-24).
func lockSpool(dir string, lock func(*os.File) (bool, error)) (unlock func(), busy bool, err error) {
	if lock == nil {
		lock = lockFile
	}
	p := filepath.Join(dir, spoolLockName)
	foreign := false
	for try := 0; try < 3; try++ {
		if removed, err := removeNotAFile(p); err != nil || removed {
			if err != nil {
				return nil, false, err
			}
			foreign = true
			continue
		}
		f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|openNoFollow|openNonBlock, 0o600)
		if err != nil {
			return nil, false, err
		}
		if fi, err := f.Stat(); err != nil || lockOthersMayOpen(fi) {
			f.Close()
			if err != nil {
				return nil, false, err
			}
			// Removed only while the name still names it: a sync that
			// made its own meanwhile keeps it.
			if pi, err := os.Lstat(p); err == nil && os.SameFile(fi, pi) {
				os.Remove(p)
			}
			foreign = true
			continue
		}
		foreign = false
		if busy, err := lock(f); busy || err != nil {
			f.Close()
			return nil, busy, err
		}
		// The sync that held it may have removed the file between this
		// open and this lock: the lock counts only on the file the name
		// still names.
		fi, err1 := f.Stat()
		pi, err2 := os.Lstat(p)
		if err1 == nil && err2 == nil && os.SameFile(fi, pi) {
			return func() { os.Remove(p); f.Close() }, false, nil
		}
		f.Close()
	}
	if foreign {
		return nil, false, errors.New("the lock file " + p + " is another user's, or others may open it, again and again: others may write the spool folder (chmod go-w it)")
	}
	return nil, true, nil
}

// removeNotAFile removes what the name p names when it is not a regular
// file: a link (not what it names), a socket, a FIFO, a device, an empty
// folder; the open of the lock file fails on each of them (O_NOFOLLOW,
// EISDIR, ENXIO) or may wait on it, and none is a sync's lock, so left
// there it refused every later sync for good. Only the name is removed
// (os.Remove follows no link). A folder holding files
// is no sync's either, but may be someone's data: it is left whole and
// the sync refused store_io, naming it and saying what to do
// (docs/SPEC-DECISIONS.md MIRROR-32). removed is false when p names
// nothing or a regular file.
func removeNotAFile(p string) (removed bool, err error) {
	fi, err := os.Lstat(p)
	if err != nil || fi.Mode().IsRegular() {
		return false, nil // nothing there (the open makes it), or judged once open
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		if fi.IsDir() {
			return false, amp.Named(0, resolver.ErrStoreIO, "the sync lock file %s is a folder holding files, made by no sync: remove it (after keeping what it holds) and sync again", p)
		}
		return false, amp.Named(0, resolver.ErrStoreIO, "the sync lock file %s is not a regular file and cannot be removed: remove it and sync again", p).WithCause(err)
	}
	return true, nil
}

// lockOthersMayOpen reports whether the lock file fi may be opened, and
// so held, by another user than the sync's: another user's (root's
// excepted, as ownedByAnother), or with any permission for group or
// others, or with another name (linkedElsewhere: a hard link to a file
// someone holds locked, the store's own database, keeps every sync out:
// docs/SPEC-DECISIONS.md MIRROR-25). Only its kind is judged on Windows,
// whose mode bits do not say who may open it (as othersMayWrite).
func lockOthersMayOpen(fi os.FileInfo) bool {
	if !fi.Mode().IsRegular() || linkedElsewhere(fi) {
		return true
	}
	return runtime.GOOS != "windows" && (fi.Mode().Perm()&0o077 != 0 || ownedByAnother(fi))
}

// errNoLocks is the cause of a spool folder whose file system does not
// lock files: a sync that writes is refused there rather than run
// unlocked (docs/SPEC-DECISIONS.md MIRROR-23).
var errNoLocks = errors.New("the file system of the sync spool folder does not lock files: a sync that writes is refused there (put the store and its spool on a local file system)")
