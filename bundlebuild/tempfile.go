package bundlebuild

import (
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// Temporary files of the writers of bundle files (build, export, join,
// split): each is created in the folder of its destination, named
// ".ampbundle-KIND-DIGITS.tmp" (or ".ampbundle-DIGITS.tmp"), held under
// an exclusive advisory lock (flock) by the process writing it for as long
// as it is open, and renamed into place when complete. A process killed
// before the rename leaves its temporary file behind; the next writer in
// that folder removes it (RemoveStaleTemps) once it is older than
// StaleTempAge and no live process holds its lock. Nothing else is ever
// removed: another name, a link, a file of another kind, or a folder
// holding anything but plain files is left as it is.

// StaleTempAge is how old a temporary file must be (by its modification
// time) before another run may remove it, where a live writer's lock can
// be seen; elsewhere staleTempAgeNoLock applies.
const StaleTempAge = time.Minute

// TempPrefix and TempSuffix frame the names of our temporary files.
const (
	TempPrefix = ".ampbundle-"
	TempSuffix = ".tmp"
)

// IsTempName reports whether name is one of our temporary files' names:
// ".ampbundle-" then an optional lower-case kind and "-", then the digits
// os.CreateTemp puts for its "*", then ".tmp".
func IsTempName(name string) bool {
	mid, ok := strings.CutPrefix(name, TempPrefix)
	if !ok {
		return false
	}
	if mid, ok = strings.CutSuffix(mid, TempSuffix); !ok {
		return false
	}
	if kind, digits, found := strings.Cut(mid, "-"); found {
		if kind == "" || strings.Trim(kind, "abcdefghijklmnopqrstuvwxyz") != "" {
			return false
		}
		mid = digits
	}
	return mid != "" && len(mid) <= 20 && strings.Trim(mid, "0123456789") == ""
}

// CreateTemp creates a temporary file of kind (lower-case letters) in dir
// and locks it for this process (the lock goes with the file when it is
// closed or the process ends). Remove or rename it when done.
func CreateTemp(dir, kind string) (*os.File, error) {
	f, err := os.CreateTemp(dir, TempPrefix+kind+"-*"+TempSuffix)
	if err != nil {
		return nil, err
	}
	if err := lockTemp(f); err != nil {
		f.Close()
		os.Remove(f.Name())
		return nil, err
	}
	return f, nil
}

// MkdirTemp creates a temporary folder of kind in dir and locks it for
// this process; the returned file holds the lock: close it after the
// folder is removed or renamed.
func MkdirTemp(dir, kind string) (string, *os.File, error) {
	p, err := os.MkdirTemp(dir, TempPrefix+kind+"-*"+TempSuffix)
	if err != nil {
		return "", nil, err
	}
	d, err := os.Open(p)
	if err == nil {
		if err = lockTemp(d); err != nil {
			d.Close()
		}
	}
	if err != nil {
		os.Remove(p)
		return "", nil, err
	}
	return p, d, nil
}

// RemoveStaleTemps removes the temporary files and folders that killed
// runs left in dir: entries named as ours (IsTempName), a plain file or a
// folder of plain files only, last modified before now minus the stale
// age, that no live process holds locked. It returns the paths removed;
// what cannot be read or removed is left alone, silently: cleaning up is
// never the reason a command fails.
func RemoveStaleTemps(dir string, now time.Time) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var removed []string
	for _, e := range entries {
		if !IsTempName(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		st, err := os.Lstat(p)
		if err != nil || now.Sub(st.ModTime()) < staleAge() {
			continue
		}
		switch {
		case st.Mode().IsRegular():
			if removeUnlocked(p, st) {
				removed = append(removed, p)
			}
		case st.IsDir():
			if removeUnlocked(p, st) {
				removed = append(removed, p)
			}
		}
	}
	return removed
}

// removeUnlocked takes p's lock without waiting (it fails when a live
// process holds it), checks that p is still the entry st describes, and
// removes it. p is opened as what st says it is, following no link and
// never waiting: a file examined before it is opened (regfile.Open), a
// folder only as a folder (regfile.OpenFolder), so a node swapped in for a
// leftover is never opened. A folder is emptied through the descriptor
// opened and locked here, never through its path (removeFolderEntries: a
// folder that holds anything but plain files is left), then removed as a
// folder only (removeDir): an entry swapped for a link meanwhile is never
// followed, so nothing outside the folder checked is ever removed
// (docs/SPEC-DECISIONS.md, BUNDLE-6).
func removeUnlocked(p string, st os.FileInfo) bool {
	var f *os.File
	var err error
	if st.IsDir() {
		f, err = regfile.OpenFolder(p, regfile.NoLinks)
	} else {
		f, _, err = regfile.Open(p, regfile.NoLinks)
	}
	if err != nil {
		return false
	}
	defer f.Close()
	if fst, err := f.Stat(); err != nil || !os.SameFile(st, fst) {
		return false
	}
	if !tryLockTemp(f) {
		return false
	}
	if !st.IsDir() {
		return os.Remove(p) == nil
	}
	return removeFolderEntries(f) && removeDir(p) == nil
}

// plainEntries lists the folder open as d, or fails when it holds anything
// but plain files (then it is not one of ours to remove).
func plainEntries(d *os.File) ([]os.DirEntry, bool) {
	entries, err := d.ReadDir(-1)
	if err != nil {
		return nil, false
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return nil, false
		}
	}
	return entries, true
}
