package keyfile

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// tempPrefix and tempSuffix name the temporary file a key file is
// written to in its folder where it cannot be written without a name
// (createTemp puts digits between them; docs/SPEC-DECISIONS.md CLI-33).
const (
	tempPrefix = ".ampbundle-key-"
	tempSuffix = ".tmp"
)

// createTemp creates a new temporary file in dir for writing, exclusively
// (a name taken, a link planted there included, is never opened: another
// name is drawn, as os.CreateTemp does) and with mode as the umask limits
// it, as a file created at its final name would be: os.CreateTemp's 0600
// widened by a chmod would give a public key file 0644 whatever the site's
// umask (docs/SPEC-DECISIONS.md, CLI-31). On Windows, where mode bits are
// not access rights, a private key's file is created with an owner-only
// access list instead (createNew).
func createTemp(dir string, mode os.FileMode) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, tempPrefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+tempSuffix)
		f, err := createNew(name, mode)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		return f, err
	}
}

// writeSteps are the steps of writeNew that tests stand in for, each on
// its own call (docs/SPEC-DECISIONS.md STYLE-2); the writers of the
// package take systemSteps.
type writeSteps struct {
	// createUnnamed is regfile.CreateUnnamed; a test's takes the named
	// temporary file a system without O_TMPFILE takes.
	createUnnamed func(dir string, mode os.FileMode) (*os.File, error)
	// now is the clock removeStaleTemps reads.
	now func() time.Time
	// writeData writes a key file's bytes to its temporary file; a
	// test's fails, or dies, half-way.
	writeData func(f *os.File, data []byte) error
}

// systemSteps are the steps writeNew takes outside tests.
func systemSteps() writeSteps {
	return writeSteps{createUnnamed: regfile.CreateUnnamed, now: time.Now, writeData: writeAll}
}

// staleTempAge is how old (by its modification time) a temporary key file
// must be before a later keygen in its folder removes it: far beyond the
// moment a live keygen holds one (CLI-33).
const staleTempAge = 24 * time.Hour

// isTempName reports whether name is a temporary key file's name
// (createTemp): tempPrefix, the decimal digits of a uint32, tempSuffix.
func isTempName(name string) bool {
	mid, ok := strings.CutPrefix(name, tempPrefix)
	if !ok {
		return false
	}
	if mid, ok = strings.CutSuffix(mid, tempSuffix); !ok {
		return false
	}
	return mid != "" && len(mid) <= 10 && strings.Trim(mid, "0123456789") == ""
}

// removeStaleTemps removes from dir the temporary key files a killed
// keygen left there (only where a key is written through a named one:
// writeNew): entries named as ours (isTempName) that are regular files,
// not links (lstat), owned by this process's user (regfile.OwnedBySelf:
// never where the owner cannot be read) and last modified at least
// staleTempAge before now. Nothing else is ever removed; what cannot be
// read or removed is left, silently: cleaning up is never the reason a
// keygen fails (docs/SPEC-DECISIONS.md, CLI-33).
func removeStaleTemps(dir string, now time.Time) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !isTempName(e.Name()) {
			continue
		}
		p := filepath.Join(dir, e.Name())
		st, err := os.Lstat(p)
		if err != nil || !st.Mode().IsRegular() || !regfile.OwnedBySelf(st) || now.Sub(st.ModTime()) < staleTempAge {
			continue
		}
		os.Remove(p)
	}
}

// writeAll writes a key file's bytes to its temporary file.
func writeAll(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}

// writeNew writes data to the new file path with mode, never replacing a
// file there, and never leaving a partial one (docs/SPEC-DECISIONS.md,
// CLI-29, CLI-33). Where the system can (Linux, O_TMPFILE, a real /proc)
// the bytes go to a file in path's folder that has no name
// (regfile.CreateUnnamed, with mode less the umask), which is synced and
// then linked at path (regfile.LinkUnnamed): a process killed on the way
// leaves nothing. Elsewhere they go to a named temporary file there
// (created exclusively, so a link planted at its name is never followed,
// with mode less the umask: createTemp), which is synced and moved to path
// by moveNew: a process killed on the way leaves that file, a copy of the
// key under a hidden name, which the next keygen in that folder removes
// once a day old (removeStaleTemps, run first; CLI-33). The folder is
// synced last. Any failure removes what was written (and path, when the
// folder cannot be synced after the move) and is ErrIOError, or
// ErrFileExists when path is taken, checked before anything is created.
// Its steps are w's (systemSteps, or a test's).
func writeNew(w writeSteps, path string, data []byte, mode os.FileMode) error {
	if _, err := os.Lstat(path); err == nil {
		return errExists()
	}
	dir := filepath.Dir(path)
	removeStaleTemps(dir, w.now())
	f, err := w.createUnnamed(dir, mode)
	unnamed := err == nil
	if errors.Is(err, regfile.ErrNoUnnamed) {
		f, err = createTemp(dir, mode)
	}
	if err != nil {
		return fail(ErrIOError, "cannot create the key file's temporary file").WithCause(err)
	}
	tmp := f.Name()
	err = w.writeData(f, data)
	if err == nil {
		err = f.Sync()
	}
	if unnamed {
		// Linked while open: closed, an unnamed file is gone.
		if err == nil {
			if lerr := regfile.LinkUnnamed(f, path); lerr != nil {
				f.Close()
				return moveErr(lerr)
			}
		}
		if cerr := f.Close(); err == nil && cerr != nil {
			os.Remove(path) // linked, but not closed cleanly
			err = cerr
		}
		if err != nil {
			return fail(ErrIOError, "cannot write the key file").WithCause(err)
		}
	} else {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			os.Remove(tmp)
			return fail(ErrIOError, "cannot write the key file").WithCause(err)
		}
		if err := moveNew(tmp, path); err != nil {
			os.Remove(tmp)
			return err
		}
	}
	if err := regfile.SyncDir(dir); err != nil {
		os.Remove(path)
		return fail(ErrIOError, "cannot make the key file durable in its folder").WithCause(err)
	}
	return nil
}

// moveNew moves the complete, synced file tmp to out, never replacing a
// file there (regfile.LinkNew): it hard-links tmp to out, which fails when
// anything is at out (a link too, never followed), then removes tmp. Where
// the file system has no hard links (FAT, some network shares) it renames
// tmp only if nothing is at out, in one step where the system can (Linux
// renameat2 RENAME_NOREPLACE, darwin renamex_np RENAME_EXCL); only on
// other systems, or a file system that cannot, is out checked, then tmp
// renamed, so that a file appearing between the two is replaced
// (CLI-32). A file at out is ErrFileExists (tmp is left to the caller);
// another failure is ErrIOError. Syncing the folder is the caller's
// (docs/SPEC-DECISIONS.md, CLI-29).
func moveNew(tmp, out string) error {
	return moveErr(regfile.LinkNew(tmp, out))
}

// moveErr names the failure of putting a key file in place: a name taken
// is ErrFileExists, another failure ErrIOError; nil stays nil.
func moveErr(err error) error {
	if err == nil {
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return errExists()
	}
	return fail(ErrIOError, "cannot move the file into place").WithCause(err)
}

// errExists is ErrFileExists, wrapping fs.ErrExist.
func errExists() *amp.Error {
	return fail(ErrFileExists, "refusing to overwrite an existing file").WithCause(fs.ErrExist)
}
