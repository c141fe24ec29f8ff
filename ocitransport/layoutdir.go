package ocitransport

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io/fs"
	"os"
	"path"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// errLayoutLink is the refusal of a folder below a layout's root that is a
// symbolic link or not a folder (a FIFO, a device, a file): nothing
// beneath it was opened (docs/SPEC-DECISIONS.md OCI-21).
func errLayoutLink() *amp.Error {
	return fail(ErrLayout, "a folder of the OCI layout is a symbolic link or not a folder")
}

// layoutDir is one folder of a layout (blobs/sha256, the root), held
// open as an os.Root from the layout's root, reached without following a
// symbolic link below it (openLayoutRoot, sub). Every name given to its
// methods is one element, never a path, resolved in the folder held: a
// folder swapped, or the layout's path repointed, after the folder was
// opened is never followed; what is checked and what is then removed,
// read, written or renamed is in that very folder, wherever it was
// moved. An endpoint opens the folders of its layout once and uses them
// until it is closed (layoutFolders; docs/SPEC-DECISIONS.md OCI-24,
// OCI-26).
type layoutDir struct {
	root *os.Root
}

// Close releases d.
func (d *layoutDir) Close() {
	if d == nil {
		return
	}
	d.root.Close()
}

func (d *layoutDir) lstat(name string) (fs.FileInfo, error) {
	return d.root.Lstat(name)
}

// open opens the regular file name for reading: a symbolic link, a FIFO
// or a device there is regfile.ErrNotRegular, never opened.
func (d *layoutDir) open(name string) (*os.File, error) {
	f, _, err := regfile.OpenIn(d.root, name)
	return f, err
}

// create creates name, which must not exist (O_EXCL: a link there is not
// followed), for writing.
func (d *layoutDir) create(name string) (*os.File, error) {
	return d.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
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
	err := d.root.Link(tmp, name)
	if err == nil {
		d.root.Remove(tmp)
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return err
	}
	// No hard links here (FAT, some network shares): rename only where
	// nothing is (a name made in between is replaced: the name is the
	// digest of the bytes just checked, docs/SPEC-DECISIONS.md OCI-21).
	if _, lerr := d.root.Lstat(name); lerr == nil {
		return &fs.PathError{Op: "link", Path: name, Err: fs.ErrExist}
	}
	return d.root.Rename(tmp, name)
}

// rename renames tmp to name in d, replacing what is there (a link is
// replaced, never followed).
func (d *layoutDir) rename(tmp, name string) error {
	return d.root.Rename(tmp, name)
}

func (d *layoutDir) remove(name string) error {
	return d.root.Remove(name)
}

// list opens the folder itself to read its entries.
func (d *layoutDir) list() (*os.File, error) {
	return d.root.Open(".")
}

// sync makes the names made or removed in d durable (fsync of the folder
// held, syncFolder), so that a crash cannot lose a blob index.json names
// (docs/SPEC-DECISIONS.md OCI-24).
func (d *layoutDir) sync() error {
	f, err := d.root.Open(".")
	if err != nil {
		return err
	}
	err = syncFolder(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
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

// openLayoutRoot opens the layout's root folder top as the operator named
// it (links in its path followed), once: as a folder only, never waiting
// (regfile.OpenFolder refuses a FIFO, a device or a file there,
// errLayoutLink, unopened), then held as an os.Root opened through
// "top/." (a name that resolves only to a folder: one put there since is
// refused, never opened). Nothing below is found by its path again.
func openLayoutRoot(top string) (*layoutDir, error) {
	f, err := regfile.OpenFolder(top, regfile.FollowLinks)
	if errors.Is(err, regfile.ErrNotFolder) {
		return nil, errLayoutLink()
	}
	if err != nil {
		return nil, err
	}
	f.Close()
	root, err := os.OpenRoot(folderOnlyPath(top))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, errLayoutLink().WithCause(err)
	}
	return &layoutDir{root: root}, nil
}

// folderOnly is the name below an os.Root that opens name as a folder
// only: "name/." resolves only where name is a folder (or a link to one
// below the root), so a FIFO or a device put at name is refused
// (ENOTDIR), never opened, its driver never run, nor waited on, where
// os.Root's OpenRoot and Open of name itself would open it (a FIFO: until
// a writer comes; docs/SPEC-DECISIONS.md OCI-21, OCI-26).
func folderOnly(name string) string { return name + "/." }

// sub opens the folder rel below d, one element at a time, each in the
// folder opened before it (subFolder): d's path is not looked up again,
// and no link below d is followed. With create, a missing element is
// made.
func (d *layoutDir) sub(rel string, create bool) (*layoutDir, error) {
	els, err := layoutElements(rel)
	if err != nil {
		return nil, err
	}
	cur := d
	for _, el := range els {
		next, err := cur.subFolder(el, create)
		if cur != d {
			cur.Close()
		}
		if err != nil {
			return nil, err
		}
		cur = next
	}
	if cur == d {
		root, err := d.root.OpenRoot(".")
		if err != nil {
			return nil, err
		}
		return &layoutDir{root: root}, nil
	}
	return cur, nil
}

// subFolder opens the folder el of d, which must be a folder and not a
// symbolic link, as an os.Root: el is examined (lstat: a link, a FIFO, a
// device or a file is errLayoutLink, never opened), then opened as
// "el/.", which resolves only to a folder (a FIFO or a device put there
// since is refused, never opened, nor waited on) and, as every name of an
// os.Root, never out of d; what was opened must be the very folder
// examined (a link put there since, to a folder of d, is refused).
// os.Root has no open that refuses a link outright (it follows one that
// stays below the root), hence the comparison. With create, a missing el
// is made (mkdirat: a link there is not followed).
func (d *layoutDir) subFolder(el string, create bool) (*layoutDir, error) {
	seen, err := d.root.Lstat(el)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = d.root.Mkdir(el, 0o755); err == nil || errors.Is(err, fs.ErrExist) {
			seen, err = d.root.Lstat(el)
		}
	}
	if err != nil {
		return nil, err
	}
	if !seen.IsDir() {
		return nil, errLayoutLink()
	}
	root, err := d.root.OpenRoot(folderOnly(el))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		return nil, errLayoutLink().WithCause(err)
	}
	st, err := root.Stat(".")
	if err != nil || !st.IsDir() || !os.SameFile(seen, st) {
		root.Close()
		return nil, errLayoutLink()
	}
	return &layoutDir{root: root}, nil
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
// followed, as the operator named it, openLayoutRoot) and its
// blobs/sha256 (no link followed, sub; a missing one is left nil).
func openLayoutFolders(root string) (*layoutFolders, error) {
	top, err := openLayoutRoot(root)
	if err != nil {
		return nil, err
	}
	return layoutFoldersOn(top)
}

// layoutFoldersOf is openLayoutFolders of a folder already held (a tar's
// build folder: never its name again, OCI-32), through a handle of its
// own.
func layoutFoldersOf(held *os.Root) (*layoutFolders, error) {
	root, err := held.OpenRoot(".")
	if err != nil {
		return nil, err
	}
	return layoutFoldersOn(&layoutDir{root: root})
}

// layoutFoldersOn is the layout folders of the root folder top, its
// blobs/sha256 opened when it is there.
func layoutFoldersOn(top *layoutDir) (*layoutFolders, error) {
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
