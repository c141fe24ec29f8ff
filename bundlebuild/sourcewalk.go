package bundlebuild

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// errWalkBound: the folders of a source list more entries than the walk's
// bound (walkSource names it).
var errWalkBound = errors.New("the source folder lists more entries than the walk's bound")

// walkListed is filepath.WalkDir for walkSource, with every folder listed
// within a bound: the entries listed over the whole walk, the root
// included, may not pass maxEntries, and a folder is read locateBatch
// entries at a time and refused (errWalkBound) as soon as a batch passes
// the bound, never read whole first (filepath.WalkDir's os.ReadDir holds
// every entry of a folder, sorted, before the walk sees one:
// docs/SPEC-DECISIONS.md BUILD-11). A folder is opened only as a folder,
// without following a link put in its place since its parent was listed
// (regfile.OpenFolder, NoLinks). As WalkDir does, fn is called for the
// root, then for each entry of a folder in name order before the entries
// of its subfolders, and once more with the error of a folder that cannot
// be listed; the root may be no folder, and is then fn's to refuse.
func walkListed(root string, maxEntries int, fn fs.WalkDirFunc) error {
	info, err := os.Lstat(root)
	if err != nil {
		return fn(root, nil, err)
	}
	listed := 1
	return walkListedFrom(root, fs.FileInfoToDirEntry(info), maxEntries, &listed, fn)
}

// walkListedFrom walks path, whose entry in its parent is d, counting the
// entries it lists in listed.
func walkListedFrom(path string, d fs.DirEntry, maxEntries int, listed *int, fn fs.WalkDirFunc) error {
	if err := fn(path, d, nil); err != nil || !d.IsDir() {
		return err
	}
	entries, err := listFolder(path, maxEntries, listed)
	if errors.Is(err, errWalkBound) {
		return err
	}
	if err != nil {
		return fn(path, d, err)
	}
	for _, e := range entries {
		if err := walkListedFrom(filepath.Join(path, e.Name()), e, maxEntries, listed, fn); err != nil {
			return err
		}
	}
	return nil
}

// listFolder lists the folder path in batches, sorted by name once whole,
// or refuses it (errWalkBound) once listed passes maxEntries. The folder
// is closed before the walk goes into its subfolders: no descriptor is
// held for each level of a deep source.
func listFolder(path string, maxEntries int, listed *int) ([]fs.DirEntry, error) {
	f, err := regfile.OpenFolder(path, regfile.NoLinks)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []fs.DirEntry
	for {
		batch, err := f.ReadDir(locateBatch)
		if *listed += len(batch); *listed > maxEntries {
			return nil, errWalkBound
		}
		out = append(out, batch...)
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}
