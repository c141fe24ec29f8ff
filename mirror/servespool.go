//go:build unix || windows

package mirror

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// serveRunPrefix begins the names ServeSpool makes in its base folder:
// run-N.lock, held locked by the mirror process that serves from the
// folder run-N beside it.
const serveRunPrefix = "run-"

// ServeSpool makes a spool folder for one mirror process (Options.SpoolDir)
// inside base, made mode 0700 when missing, and returns it with what
// removes it when the mirror ends. The folder run-N is made only once its
// lock file run-N.lock, beside it, is held locked (the system's lock,
// which goes with the process), so that a mirror killed (a restart, the
// OOM killer, a reboot) leaves a folder whose lock no one holds; before
// making its own, ServeSpool removes every such folder of base with its
// bundle copies, up to Options.MaxBundleBytes each, and leaves those of
// mirrors still running. Nothing there is ever served: a server serves
// only the files it exported itself (docs/SPEC-DECISIONS.md MIRROR-25,
// MIRROR-34). Two mirror processes of one store may share base (each
// has its own folder); on Solaris and AIX, whose lock (fcntl) is the
// process's, only one ServeSpool per process may use a base.
func ServeSpool(base string) (dir string, release func(), err error) {
	if err := os.MkdirAll(base, 0o700); err != nil {
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
		fi, err1 := f.Stat()
		pi, err2 := os.Lstat(lock)
		if err != nil || busy || err1 != nil || err2 != nil || !os.SameFile(fi, pi) {
			f.Close()
			if err != nil {
				os.Remove(lock)
				return "", nil, err
			}
			continue
		}
		dir = strings.TrimSuffix(lock, ".lock")
		if err := os.Mkdir(dir, 0o700); err != nil {
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

// removeEndedRuns removes from base the folders of ServeSpool whose mirror
// process has ended: their lock file is not held (or is gone), as the
// process took it before making the folder and removes the folder before
// it. A lock held by a running mirror, a name ServeSpool does not make,
// or a lock file that is not a regular file, is left as it is.
func removeEndedRuns(base string) {
	entries, err := os.ReadDir(base)
	if err != nil {
		return
	}
	seen := map[string]bool{}
	for _, e := range entries {
		run := strings.TrimSuffix(e.Name(), ".lock")
		if !strings.HasPrefix(run, serveRunPrefix) || seen[run] {
			continue
		}
		seen[run] = true
		removeEndedRun(filepath.Join(base, run))
	}
}

// removeEndedRun removes the ServeSpool folder run and its lock file
// unless a running mirror holds the lock.
func removeEndedRun(run string) {
	lock := run + ".lock"
	fi, err := os.Lstat(lock)
	if errors.Is(err, fs.ErrNotExist) {
		os.RemoveAll(run) // no lock: its mirror ended while removing it
		return
	}
	if err != nil || !fi.Mode().IsRegular() {
		return
	}
	f, err := os.OpenFile(lock, os.O_RDWR|openNoFollow|openNonBlock, 0)
	if err != nil {
		return
	}
	defer f.Close()
	if busy, err := lockFile(f); busy || err != nil {
		return
	}
	os.RemoveAll(run)
	os.Remove(lock) // while held, so that no mirror takes it meanwhile
}
