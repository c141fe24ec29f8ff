package ocitransport

import (
	"crypto/rand"
	"encoding/hex"
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
// (openLayoutDir, sub). Every name given to its methods is one element,
// never a path: nothing is resolved below the folder but the name itself,
// which is not followed either. An endpoint opens the folders of its
// layout once and uses them until it is closed (layoutFolders).
//
// Where the folder was walked by descriptor (Linux with its proc file
// system), fd is that very folder and root is anchored at it, whatever is
// put in those names since; elsewhere dir is the folder's path, top and
// els the layout's root and the elements below it, each of which is
// found a folder, not a link, again just before each use (at: a swap in
// between is followed; what is read there is still a regular file,
// checked against its digest).
type layoutDir struct {
	root *os.Root
	fd   *os.File
	dir  string
	top  string
	els  []string
}

// Close releases d.
func (d *layoutDir) Close() {
	if d == nil {
		return
	}
	if d.root != nil {
		d.root.Close()
	}
	if d.fd != nil {
		d.fd.Close()
	}
}

// at is the path of name in d, where d is reached by path: each element
// of d below the layout's root is checked again a folder and not a link.
func (d *layoutDir) at(name string) (string, error) {
	dir := d.top
	for _, el := range d.els {
		dir = filepath.Join(dir, el)
		st, err := os.Lstat(dir)
		if err != nil {
			return "", err
		}
		if !st.IsDir() {
			return "", errLayoutLink()
		}
	}
	return filepath.Join(dir, name), nil
}

func (d *layoutDir) lstat(name string) (fs.FileInfo, error) {
	if d.root != nil {
		return d.root.Lstat(name)
	}
	p, err := d.at(name)
	if err != nil {
		return nil, err
	}
	return os.Lstat(p)
}

// open opens the regular file name for reading: a symbolic link, a FIFO
// or a device there is regfile.ErrNotRegular, never opened.
func (d *layoutDir) open(name string) (*os.File, error) {
	if d.root != nil {
		f, _, err := regfile.OpenIn(d.root, name)
		return f, err
	}
	p, err := d.at(name)
	if err != nil {
		return nil, err
	}
	f, _, err := regfile.Open(p, regfile.NoLinks)
	return f, err
}

// create creates name, which must not exist (O_EXCL: a link there is not
// followed), for writing.
func (d *layoutDir) create(name string) (*os.File, error) {
	const flag = os.O_WRONLY | os.O_CREATE | os.O_EXCL
	if d.root != nil {
		return d.root.OpenFile(name, flag, 0o644)
	}
	p, err := d.at(name)
	if err != nil {
		return nil, err
	}
	return os.OpenFile(p, flag, 0o644)
}

// createTemp creates a new file named prefix and a random suffix (create).
func (d *layoutDir) createTemp(prefix string) (*os.File, string, error) {
	for range 8 {
		var rnd [8]byte
		rand.Read(rnd[:])
		name := prefix + hex.EncodeToString(rnd[:])
		f, err := d.create(name)
		if !errors.Is(err, fs.ErrExist) {
			return f, name, err
		}
	}
	return nil, "", &fs.PathError{Op: "create", Path: prefix + "*", Err: fs.ErrExist}
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
	from, err := d.at(tmp)
	if err != nil {
		return err
	}
	return regfile.LinkNew(from, filepath.Join(filepath.Dir(from), name))
}

// rename renames tmp to name in d, replacing what is there (a link is
// replaced, never followed).
func (d *layoutDir) rename(tmp, name string) error {
	if d.root != nil {
		return d.root.Rename(tmp, name)
	}
	from, err := d.at(tmp)
	if err != nil {
		return err
	}
	return os.Rename(from, filepath.Join(filepath.Dir(from), name))
}

func (d *layoutDir) remove(name string) error {
	if d.root != nil {
		return d.root.Remove(name)
	}
	p, err := d.at(name)
	if err != nil {
		return err
	}
	return os.Remove(p)
}

// list opens the folder itself to read its entries.
func (d *layoutDir) list() (*os.File, error) {
	if d.root != nil {
		return d.root.Open(".")
	}
	p, err := d.at(".")
	if err != nil {
		return nil, err
	}
	return regfile.OpenFolder(p, regfile.NoLinks)
}

// sync makes the names made or removed in d durable (fsync of the folder),
// so that a crash cannot lose a blob index.json names
// (docs/SPEC-DECISIONS.md OCI-24).
func (d *layoutDir) sync() error {
	if d.fd != nil {
		return d.fd.Sync()
	}
	p, err := d.at(".")
	if err != nil {
		return err
	}
	return regfile.SyncDir(p)
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
// (lstat, just before, and again at each use; with create, a missing one
// is made): where no descriptor walk is possible.
func openLayoutPathDir(top string, rel string, create bool) (*layoutDir, error) {
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
	if len(els) == 0 {
		f, err := regfile.OpenFolder(top, regfile.FollowLinks)
		if errors.Is(err, regfile.ErrNotFolder) {
			return nil, errLayoutLink()
		}
		if err != nil {
			return nil, err
		}
		f.Close()
	}
	return &layoutDir{dir: dir, top: top, els: els}, nil
}

// subByPath opens the folder rel below d, reached by path, as
// openLayoutPathDir does: each element below the layout's root is checked
// again at each use.
func (d *layoutDir) subByPath(rel string, create bool) (*layoutDir, error) {
	p, err := d.at(".")
	if err != nil {
		return nil, err
	}
	sd, err := openLayoutPathDir(p, rel, create)
	if err != nil {
		return nil, err
	}
	sd.top, sd.els = d.top, append(append([]string(nil), d.els...), sd.els...)
	return sd, nil
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

// layoutFolders are the folders of a layout one operation (an Endpoint,
// from Open to Close) reads and writes through, each opened once: the
// root, and blobs/sha256 (nil while the layout has none). Each access
// walked the layout's path from its root again: a root named through a
// link another could repoint mid-operation had the bounds checked on one
// layout and the blobs read, or written, in another
// (docs/SPEC-DECISIONS.md OCI-24).
type layoutFolders struct {
	top   *layoutDir
	blobs *layoutDir
}

// openLayoutFolders opens the layout folder root (links in its path
// followed, as the operator named it) and its blobs/sha256 (not followed,
// openLayoutDir; a missing one is left nil).
func openLayoutFolders(root string) (*layoutFolders, error) {
	top, err := openLayoutDir(root, ".", false)
	if err != nil {
		return nil, err
	}
	lf := &layoutFolders{top: top}
	if err := lf.openBlobs(false); err != nil && !errors.Is(err, fs.ErrNotExist) {
		lf.Close()
		return nil, err
	}
	return lf, nil
}

// openBlobs opens blobs/sha256 below the root held (with create, a
// missing folder is made), unless it is open already.
func (lf *layoutFolders) openBlobs(create bool) error {
	if lf.blobs != nil {
		return nil
	}
	b, err := lf.top.sub("blobs/sha256", create)
	if err != nil {
		return err
	}
	lf.blobs = b
	return nil
}

// dir is the folder rel of the layout: one held, or (another algorithm's
// blobs folder) reached from the root held; the caller closes it (close).
func (lf *layoutFolders) dir(rel string) (d *layoutDir, close func(), err error) {
	switch path.Clean(rel) {
	case ".":
		return lf.top, func() {}, nil
	case "blobs/sha256":
		if lf.blobs == nil {
			return nil, nil, &fs.PathError{Op: "open", Path: rel, Err: fs.ErrNotExist}
		}
		return lf.blobs, func() {}, nil
	}
	d, err = lf.top.sub(rel, false)
	if err != nil {
		return nil, nil, err
	}
	return d, d.Close, nil
}

// Close releases the folders.
func (lf *layoutFolders) Close() {
	if lf == nil {
		return
	}
	lf.blobs.Close()
	lf.top.Close()
}
