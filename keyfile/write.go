package keyfile

import (
	"errors"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// tempPrefix and tempSuffix name the temporary file a key file is
// written to in its folder (createTemp puts digits between them): the
// name of the temporary files of the bundle writers (docs/CLI.md §1.9),
// so that what a killed keygen leaves is theirs to remove once stale.
const (
	tempPrefix = ".ampbundle-key-"
	tempSuffix = ".tmp"
)

// createTemp creates a new temporary file in dir for writing, exclusively
// (a name taken, a link planted there included, is never opened: another
// name is drawn, as os.CreateTemp does) and with mode as the umask limits
// it, as a file created at its final name would be: os.CreateTemp's 0600
// widened by a chmod would give a public key file 0644 whatever the site's
// umask (docs/SPEC-DECISIONS.md, CLI-31).
func createTemp(dir string, mode os.FileMode) (*os.File, error) {
	for try := 0; ; try++ {
		name := filepath.Join(dir, tempPrefix+strconv.FormatUint(uint64(rand.Uint32()), 10)+tempSuffix)
		f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
		if errors.Is(err, fs.ErrExist) && try < 10000 {
			continue
		}
		return f, err
	}
}

// writeData writes a key file's bytes to its temporary file. Tests
// replace it to fail, or to die, half-way.
var writeData = func(f *os.File, data []byte) error {
	_, err := f.Write(data)
	return err
}

// writeNew writes data to the new file path with mode, never replacing a
// file there, and never leaving a partial one (docs/SPEC-DECISIONS.md,
// CLI-29): the bytes go to a temporary file in path's folder (created
// exclusively, so a link planted at its name is never followed, with mode
// less the umask: createTemp), which is synced and moved to path by
// MoveNew; the folder is synced last. A process killed on the way leaves
// at most the temporary file; any failure removes it (and path, when the folder
// cannot be synced after the move) and is ErrIOError, or ErrFileExists
// when path is taken, checked before anything is created.
func writeNew(path string, data []byte, mode os.FileMode) error {
	if _, err := os.Lstat(path); err == nil {
		return errExists()
	}
	dir := filepath.Dir(path)
	f, err := createTemp(dir, mode)
	if err != nil {
		return fail(ErrIOError, "cannot create the key file's temporary file").WithCause(err)
	}
	tmp := f.Name()
	err = writeData(f, data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return fail(ErrIOError, "cannot write the key file").WithCause(err)
	}
	if err := MoveNew(tmp, path); err != nil {
		os.Remove(tmp)
		return err
	}
	if err := regfile.SyncDir(dir); err != nil {
		os.Remove(path)
		return fail(ErrIOError, "cannot make the key file durable in its folder").WithCause(err)
	}
	return nil
}

// MoveNew moves the complete, synced file tmp to out, never replacing a
// file there (regfile.LinkNew): it hard-links tmp to out, which fails when
// anything is at out (a link too, never followed), then removes tmp. Where
// the file system has no hard links (FAT, some network shares) it renames
// tmp after checking that out is absent: only a file appearing between the
// check and the rename is replaced. A file at out is ErrFileExists (tmp is
// left to the caller); another failure is ErrIOError. Syncing the folder
// is the caller's (docs/SPEC-DECISIONS.md, CLI-29).
func MoveNew(tmp, out string) error {
	err := regfile.LinkNew(tmp, out)
	if errors.Is(err, fs.ErrExist) {
		return errExists()
	}
	if err != nil {
		return fail(ErrIOError, "cannot move the file into place").WithCause(err)
	}
	return nil
}

// errExists is ErrFileExists, wrapping fs.ErrExist.
func errExists() *amp.Error {
	return fail(ErrFileExists, "refusing to overwrite an existing file").WithCause(fs.ErrExist)
}
