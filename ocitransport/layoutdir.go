package ocitransport

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// errLayoutLink is the refusal of a folder below a layout's root that is a
// symbolic link or not a folder (a FIFO, a device, a file): nothing
// beneath it was opened (docs/SPEC-DECISIONS.md OCI-21).
func errLayoutLink() error {
	return fail(ErrLayout, "a folder of the OCI layout is a symbolic link or not a folder")
}

// layoutDir is one folder of a layout (blobs/sha256, the root), reached
// from the layout's root without following a symbolic link below it
// (openLayoutDir). Every name given to its methods is one element, never
// a path: nothing is resolved below the folder but the name itself, which
// is not followed either.
//
// Where the folder was walked by descriptor (Linux with its proc file
// system), root is anchored at the very folder each element of the walk
// opened, whatever is put in those names since; elsewhere dir is the
// folder's path, each element of which was found a folder, not a link,
// just before (a swap in between is followed; what is read there is still
// a regular file, checked against its digest).
type layoutDir struct {
	root *os.Root
	dir  string
}

// Close releases d.
func (d *layoutDir) Close() {
	if d.root != nil {
		d.root.Close()
	}
}

func (d *layoutDir) lstat(name string) (fs.FileInfo, error) {
	if d.root != nil {
		return d.root.Lstat(name)
	}
	return os.Lstat(filepath.Join(d.dir, name))
}

// open opens the regular file name for reading: a symbolic link, a FIFO
// or a device there is regfile.ErrNotRegular, never opened.
func (d *layoutDir) open(name string) (*os.File, error) {
	if d.root != nil {
		f, _, err := regfile.OpenIn(d.root, name)
		return f, err
	}
	f, _, err := regfile.Open(filepath.Join(d.dir, name), regfile.NoLinks)
	return f, err
}

// create creates name, which must not exist (O_EXCL: a link there is not
// followed), for writing.
func (d *layoutDir) create(name string) (*os.File, error) {
	const flag = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if d.root != nil {
		return d.root.OpenFile(name, flag, 0o644)
	}
	return os.OpenFile(filepath.Join(d.dir, name), flag, 0o644)
}

// linkNew gives the file tmp the name name, never replacing anything
// there (a hard link, which fails on any name taken), then removes tmp.
// A name taken is fs.ErrExist.
func (d *layoutDir) linkNew(tmp, name string) error {
	if d.root != nil {
		err := d.root.Link(tmp, name)
		if err == nil {
			d.root.Remove(tmp)
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return err
		}
		// No hard links here (FAT, some network shares): rename only
		// where nothing is (a name made in between is replaced).
		if _, lerr := d.root.Lstat(name); lerr == nil {
			return &fs.PathError{Op: "link", Path: name, Err: fs.ErrExist}
		}
		return d.root.Rename(tmp, name)
	}
	return regfile.LinkNew(filepath.Join(d.dir, tmp), filepath.Join(d.dir, name))
}

func (d *layoutDir) remove(name string) error {
	if d.root != nil {
		return d.root.Remove(name)
	}
	return os.Remove(filepath.Join(d.dir, name))
}

// list opens the folder itself to read its entries.
func (d *layoutDir) list() (*os.File, error) {
	if d.root != nil {
		return d.root.Open(".")
	}
	return regfile.OpenFolder(d.dir, regfile.NoLinks)
}

// layoutElements splits rel (slash-separated, relative to the layout's
// root; "" or "." the root) into its elements.
func layoutElements(rel string) ([]string, error) {
	rel = path.Clean(rel)
	if rel == "." {
		return nil, nil
	}
	if !fs.ValidPath(rel) {
		return nil, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrInvalid}
	}
	return strings.Split(rel, "/"), nil
}

// openLayoutPathDir opens the folder rel of the layout at top by its
// path, each element of which must be a folder and not a symbolic link
// (lstat, just before; with create, a missing one is made): where no
// descriptor walk is possible.
func openLayoutPathDir(top, rel string, create bool) (*layoutDir, error) {
	els, err := layoutElements(rel)
	if err != nil {
		return nil, err
	}
	dir := top
	for _, el := range els {
		dir = filepath.Join(dir, el)
		st, err := os.Lstat(dir)
		if errors.Is(err, fs.ErrNotExist) && create {
			if err = os.Mkdir(dir, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
				st, err = os.Lstat(dir)
			}
		}
		if err != nil {
			return nil, err
		}
		if !st.IsDir() {
			return nil, errLayoutLink()
		}
	}
	return &layoutDir{dir: dir}, nil
}

// splitLayoutName splits name (slash-separated, relative) into its folder
// and its last element.
func splitLayoutName(name string) (string, string, error) {
	if !fs.ValidPath(name) || name == "." {
		return "", "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	dir, base := path.Split(name)
	return dir, base, nil
}
