//go:build unix || windows

package mirror

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// serveRunPrefix begins the names ServeSpool makes in its base folder:
// run-N.lock, held locked by the mirror process that serves from the
// folder run-N beside it.
const serveRunPrefix = "run-"

// serveRunName matches the names ServeSpool makes in its base folder and
// nothing else: the folder run-N and its lock file run-N.lock, N the
// digits os.CreateTemp puts in place of its "*". Any other name there
// (run-notes.txt, run-2025-backup) is someone else's and is never removed
// (docs/SPEC-DECISIONS.md MIRROR-35).
var serveRunName = regexp.MustCompile(`^run-[0-9]+(\.lock)?$`)

// ErrNoFileLocks is the cause of ServeSpool's refusal where the system,
// or the file system of its base folder, does not lock files: the folder
// of a running mirror could not be told from a killed one's.
var ErrNoFileLocks = errors.New("the file system of the mirror's spool folder does not lock files: give the mirror a spool folder of its own on a local file system (--spool)")

// SpoolBaseError is ServeSpool's refusal of a base folder through which
// another user could redirect or replace what the mirror writes and
// removes: Path is the folder judged (the base, or a folder above it),
// Why says what is wrong with it (docs/SPEC-DECISIONS.md MIRROR-35).
type SpoolBaseError struct {
	Path string
	Why  string
}

func (e *SpoolBaseError) Error() string { return e.Path + " " + e.Why }

// ServeSpool makes a spool folder for one mirror process (Options.SpoolDir)
// inside base, made mode 0700 when missing, and returns it with what
// removes it when the mirror ends. base must be a folder, not a link, of
// this process's user (or root's) that group and others may not write,
// below folders through which no other user may replace it, as the sync
// spool is judged (othersMayWrite, folderAboveOthersMayWrite): otherwise
// it is refused, *SpoolBaseError, and nothing in it is touched. The folder
// run-N is made only once its lock file run-N.lock, beside it, is held
// locked (the system's lock, which goes with the process), so that a
// mirror killed (a restart, the OOM killer, a reboot) leaves a folder
// whose lock no one holds; before making its own, ServeSpool removes every
// such folder of base with its bundle copies, up to
// Options.MaxBundleBytes each, and leaves those of mirrors still running.
// Nothing there is ever served: a server serves only the files it
// exported itself (docs/SPEC-DECISIONS.md MIRROR-25, MIRROR-34,
// MIRROR-35). Two mirror processes of one store may share base (each has
// its own folder); on Solaris and AIX, whose lock (fcntl) is the
// process's, only one ServeSpool per process may use a base. A file
// system that does not lock files is ErrNoFileLocks.
func ServeSpool(base string) (dir string, release func(), err error) {
	if err := makeSpoolBase(base); err != nil {
		return "", nil, err
	}
	if err := judgeSpoolBase(base); err != nil {
		return "", nil, err
	}
	removeEndedRuns(base)
	for range 3 {
		f, err := os.CreateTemp(base, serveRunPrefix+"*.lock")
		if err != nil {
			return "", nil, err
		}
		lock := f.Name()
		busy, err := lockFile(f)
		// Another process's removeEndedRuns may have taken and removed
		// the file between its making and this lock: the lock counts only
		// on the file the name still names.
		if err != nil || busy || !stillNamed(f, lock) {
			f.Close()
			if err != nil {
				os.Remove(lock)
				if errors.Is(err, errNoLocks) {
					err = ErrNoFileLocks // the mirror's words, not the sync's
				}
				return "", nil, err
			}
			continue
		}
		dir = strings.TrimSuffix(lock, ".lock")
		if err := makeRunFolder(dir); err != nil {
			f.Close()
			os.Remove(lock)
			return "", nil, err
		}
		return dir, func() {
			os.RemoveAll(dir) // before its lock: no folder is ever left unlocked but a killed one's
			f.Close()
			os.Remove(lock)
		}, nil
	}
	return "", nil, errors.New("the mirror's spool lock files in " + base + " were removed again and again under it")
}

// judgeSpoolBase refuses (*SpoolBaseError) a spool base folder that is a
// link (the sweep and each export's prune would work in its target), not
// a folder, another user's, writable by group or others (who could swap
// a running mirror's run-N for a link), or below a folder through which
// another user may replace it; the rules of the sync spool
// (othersMayWrite, folderAboveOthersMayWrite; not judged on Windows but
// the link and the kind).
func judgeSpoolBase(base string) error {
	fi, err := os.Lstat(base)
	if err != nil {
		return err
	}
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return &SpoolBaseError{base, "is a link: the mirror's spool folder must be a folder of its own"}
	case !fi.IsDir():
		return &SpoolBaseError{base, "is not a folder"}
	case othersMayWrite(fi):
		if uid, foreign := regfile.ForeignOwner(fi); foreign {
			return &SpoolBaseError{base, fmt.Sprintf("is owned by user %d, neither this process's user nor root", uid)}
		}
		if ownedByAnother(fi) {
			return &SpoolBaseError{base, "has an owner that cannot be read"}
		}
		return &SpoolBaseError{base, fmt.Sprintf("may be written by group or others (mode %04o)", fi.Mode().Perm())}
	}
	if _, above := folderAboveOthersMayWrite(base); above != "" {
		return aboveSpoolBase(above)
	}
	return nil
}

// makeSpoolBase makes base, mode 0700, when it is missing, after judging
// the folder it goes in and those above it (MIRROR-35's rule): nothing
// is created below a folder another user may redirect. It makes base
// alone, not the folders above (the store's folder exists).
func makeSpoolBase(base string) error {
	if _, err := os.Lstat(base); !errors.Is(err, fs.ErrNotExist) {
		return nil // judged as it is by judgeSpoolBase
	}
	parent := filepath.Dir(base)
	if _, above := folderAboveOthersMayWrite(parent); above != "" {
		return aboveSpoolBase(above)
	}
	st, err := os.Stat(parent)
	if err != nil {
		return err
	}
	if _, foreign := regfile.ForeignOwner(st); foreign || regfile.OthersMayRename(st) {
		return aboveSpoolBase(parent)
	}
	if err := os.Mkdir(base, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return err
	}
	return nil
}

// aboveSpoolBase is the refusal of a spool base below the folder above,
// through which another user may replace or redirect it.
func aboveSpoolBase(above string) error {
	return &SpoolBaseError{above, "lies above the mirror's spool folder and another user may replace or redirect what it holds (owned by another user, or writable by group or others without the sticky bit)"}
}

// makeRunFolder makes the folder run of this mirror, mode 0700, and
// checks that it is a folder of this user's, never a link (os.Mkdir does
// not follow one, but the base was judged by path).
func makeRunFolder(run string) error {
	if err := os.Mkdir(run, 0o700); err != nil {
		return err
	}
	if !ownRunFolder(run) {
		return errors.New(run + " is not the folder this mirror made")
	}
	return nil
}

// ownRunFolder reports whether run names a folder, not a link, of this
// process's user (or root's): the only run folders ServeSpool removes.
func ownRunFolder(run string) bool {
	fi, err := os.Lstat(run)
	return err == nil && fi.IsDir() && fi.Mode()&fs.ModeSymlink == 0 && !ownedByAnother(fi)
}

// stillNamed reports whether the name p still names the open file f.
func stillNamed(f *os.File, p string) bool {
	fi, err1 := f.Stat()
	pi, err2 := os.Lstat(p)
	return err1 == nil && err2 == nil && os.SameFile(fi, pi)
}

// removeEndedRuns removes from base the folders of ServeSpool whose mirror
// process has ended: their lock file is not held (or is gone), as the
// process took it before making the folder and removes the folder before
// it. A lock held by a running mirror, a name ServeSpool does not make
// (serveRunName), a lock file that is not a regular file, or a run-N that
// is not a folder of this user's (a link), is left as it is.
func removeEndedRuns(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, e := range entries {
		if !serveRunName.MatchString(e.Name()) {
			continue
		}
		run := strings.TrimSuffix(e.Name(), ".lock")
		if seen[run] {
			continue
		}
		seen[run] = true
		removeEndedRun(filepath.Join(base, run))
	}
}

// removeEndedRun removes the ServeSpool folder run and its lock file
// unless a running mirror holds the lock, or run is not a folder of this
// user's (ownRunFolder: then both stay). The lock file is removed while
// held where the system allows it; on Windows, where a file open without
// FILE_SHARE_DELETE (as Go opens) cannot be removed, it is closed first
// and removed only while its name still names the file found unlocked: a
// new mirror never takes a lock file it did not create (os.CreateTemp's
// O_EXCL), so no running mirror can hold it meanwhile.
func removeEndedRun(run string) {
	lock := run + ".lock"
	fi, err := os.Lstat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		if ownRunFolder(run) {
			os.RemoveAll(run) // no lock: its mirror ended while removing it
		}
		return
	}
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	f, err := os.OpenFile(lock, os.O_RDWR|openNoFollow|openNonBlock, 0)
	if err != nil {
		return
	}
	if busy, err := lockFile(f); busy || err != nil || !stillNamed(f, lock) {
		f.Close()
		return
	}
	if _, err := os.Lstat(run); err == nil && !ownRunFolder(run) {
		f.Close()
		return // a link or another's in a run folder's place: not removed, nor its lock
	}
	os.RemoveAll(run)
	if err := os.Remove(lock); err == nil || errors.Is(err, fs.ErrNotExist) {
		f.Close() // removed while held, so that no mirror takes it meanwhile
		return
	}
	fi, _ = f.Stat()
	f.Close()
	if pi, err := os.Lstat(lock); err == nil && fi != nil && os.SameFile(fi, pi) {
		os.Remove(lock)
	}
}
