package bundlebuild

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
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
//
// dir is opened only as a folder, without waiting (regfile.OpenFolder: a
// FIFO or a device put in its place is never opened), and read in
// batches of locateBatch entries, never whole. The entries listed, those
// of dir and of every leftover folder in it together, are at most
// MaxStaleScanEntries: past them the clean-up stops, leaving the rest to
// a later run; a leftover folder holding more entries than a split's
// stage can (bundle.MaxParts parts and the index) is not ours and is
// left after one batch past that count (docs/SPEC-DECISIONS.md BUILD-13).
func RemoveStaleTemps(dir string, now time.Time) []string {
	return removeStaleTemps(dir, now, entryBudget{left: MaxStaleScanEntries, stage: maxStageEntries})
}

// removeStaleTemps is RemoveStaleTemps within budget (the package's tests
// pass less than MaxStaleScanEntries and maxStageEntries).
func removeStaleTemps(dir string, now time.Time, budget entryBudget) []string {
	d, err := regfile.OpenFolder(dir, regfile.FollowLinks)
	if err != nil {
		return nil
	}
	defer d.Close()
	var removed []string
	for {
		batch, err := d.ReadDir(locateBatch)
		if budget.left -= len(batch); budget.left < 0 {
			return removed
		}
		for _, e := range batch {
			if !IsTempName(e.Name()) {
				continue
			}
			p := filepath.Join(dir, e.Name())
			st, err := os.Lstat(p)
			if err != nil || now.Sub(st.ModTime()) < staleAge() || !(st.Mode().IsRegular() || st.IsDir()) {
				continue
			}
			if removeWithin(p, st, &budget) {
				removed = append(removed, p)
			}
			if budget.left < 0 {
				return removed
			}
		}
		if err != nil { // io.EOF, or a folder that cannot be read on
			return removed
		}
	}
}

// MaxStaleScanEntries bounds the folder entries one RemoveStaleTemps
// lists, over the folder it cleans and every leftover folder in it: a
// full split's stage (bundle.MaxParts + 1 entries) several times over,
// while a shared folder ($TMPDIR for -o - and import -) that another
// user floods with entries, or a planted folder of millions of files,
// costs each run that many entries, read a batch at a time
// (docs/SPEC-DECISIONS.md BUILD-13).
const MaxStaleScanEntries = 1 << 16

// maxStageEntries is the most entries a folder of ours holds: a split's
// stage, its parts and the index.
const maxStageEntries = bundle.MaxParts + 1

// entryBudget is what one clean-up may still list (left:
// MaxStaleScanEntries for RemoveStaleTemps, maxStageEntries for
// removeUnlocked) and the most entries a folder of ours holds (stage:
// maxStageEntries). It is carried by each clean-up, so the package's
// tests lower it on their own run.
type entryBudget struct{ left, stage int }

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
	budget := entryBudget{left: maxStageEntries, stage: maxStageEntries}
	return removeWithin(p, st, &budget)
}

// removeWithin is removeUnlocked, the entries of a folder listed counted
// against budget (RemoveStaleTemps's).
func removeWithin(p string, st os.FileInfo, budget *entryBudget) bool {
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
	return removeFolderEntries(f, budget) && removeDir(p) == nil
}

// plainEntries lists the folder open as d, or fails when it holds anything
// but plain files, or more than budget.stage (maxStageEntries: then it is
// not one of ours to remove). It reads a batch at a time, each counted
// against budget.left, and fails once that is spent.
func plainEntries(d *os.File, budget *entryBudget) ([]os.DirEntry, bool) {
	var entries []os.DirEntry
	for {
		batch, err := d.ReadDir(locateBatch)
		if budget.left -= len(batch); budget.left < 0 || len(entries)+len(batch) > budget.stage {
			return nil, false
		}
		for _, e := range batch {
			if !e.Type().IsRegular() {
				return nil, false
			}
		}
		entries = append(entries, batch...)
		if err == io.EOF {
			return entries, true
		}
		if err != nil {
			return nil, false
		}
	}
}
