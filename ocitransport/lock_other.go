//go:build !unix

package ocitransport

import (
	"errors"
	"io/fs"
	"os"
)

// tryLockFile takes the lock of the layout whose root folder is top by
// creating its lock file LayoutLockFile (O_CREATE|O_EXCL) in the very
// folder held, removed at unlock: a process killed while holding it
// leaves it, and the operator removes it (the error names it). ok is
// false when another holds it.
func tryLockFile(top *layoutDir) (unlock func(), ok bool, err error) {
	f, err := top.root.OpenFile(LayoutLockFile, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	f.Close()
	return func() { top.root.Remove(LayoutLockFile) }, true, nil
}

// tryLockFolder takes no lock here (no flock): only a temporary layout
// folder's age tells whether a writer still uses it
// (removeStaleTarTemps).
func tryLockFolder(*os.File) (ok bool, err error) {
	return false, errors.ErrUnsupported
}
