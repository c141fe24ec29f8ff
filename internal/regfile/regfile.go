package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrNotRegular is the refusal of a name that does not lead to a regular
// file (a FIFO, a device, a folder, a link where none may be): nothing was
// opened.
var ErrNotRegular = errors.New("not a regular file")

// Links says whether Open follows links in the last element of a path.
type Links int

const (
	// FollowLinks resolves the links of the path first
	// (filepath.EvalSymlinks): a file the operator names through a link
	// of their own is read; the file the links lead to is then examined
	// and opened without following any further link.
	FollowLinks Links = iota
	// NoLinks refuses a link as the last element (ErrNotRegular); the
	// folders on the way are followed as the system does.
	NoLinks
)

// Open opens path for reading only when it leads to a regular file, and
// returns it with what fstat shows of it, which is the very file examined
// before it was opened. Anything else is ErrNotRegular and is never opened
// (see the package documentation for how strong "never" is per system);
// other failures are the system's errors.
func Open(path string, links Links) (*os.File, fs.FileInfo, error) {
	return openVia(path, links, procSelfFD)
}

// procSelfFD is the folder through which, on Linux, a descriptor is
// opened again (openPlace, openStream, CreateUnnamed, LinkUnnamed); the
// unexported openers take it as a parameter, which tests point where
// nothing is, or at a folder that is not procfs (docs/SPEC-DECISIONS.md
// STYLE-2). Other systems do not use it.
const procSelfFD = "/proc/self/fd/"

// openVia is Open, a descriptor opened again through proc (procSelfFD).
func openVia(path string, links Links, proc string) (*os.File, fs.FileInfo, error) {
	target := path
	if links == FollowLinks {
		t, err := filepath.EvalSymlinks(path)
		if err != nil {
			return nil, nil, err
		}
		target = t
	}
	return openPlace(pathPlace(target), proc)
}

// OpenIn opens name beneath root (os.Root: a name that leads out of it is
// refused) for reading only when it is a regular file, as Open does with
// NoLinks: the last element is not followed, and the file is examined
// before it is opened. The file stays open after root is closed.
func OpenIn(root *os.Root, name string) (*os.File, fs.FileInfo, error) {
	return openPlace(rootPlace{root, name}, procSelfFD)
}

// ErrNotFolder is the refusal of a name OpenFolder was given that is no
// folder (where the system has O_DIRECTORY, it was never opened).
var ErrNotFolder = errors.New("not a folder")

// OpenFolder opens path for reading its entries only when it is a folder:
// without waiting and, where the system has O_DIRECTORY, only as a folder,
// so a FIFO or a device put in its place is never opened (its driver never
// runs); with NoLinks a link as the last element is not followed. What
// was opened must be a folder (fstat), else ErrNotFolder.
func OpenFolder(path string, links Links) (*os.File, error) {
	flag := os.O_RDONLY | NoWait | dirOnly
	if links == NoLinks {
		flag |= noFollow
	}
	d, err := os.OpenFile(path, flag, 0)
	if err != nil {
		if errors.Is(err, notDir) {
			return nil, ErrNotFolder
		}
		return nil, err
	}
	if st, err := d.Stat(); err != nil || !st.IsDir() {
		d.Close()
		if err != nil {
			return nil, err
		}
		return nil, ErrNotFolder
	}
	return d, nil
}

// place is a name Open examines and opens: a path, or a name beneath a
// root.
type place interface {
	lstat() (fs.FileInfo, error)
	// open opens the name with flag (O_RDONLY and the like) and never
	// follows a link in its last element where the system can refuse it.
	open(flag int) (*os.File, error)
}

// pathPlace is a path.
type pathPlace string

func (p pathPlace) lstat() (fs.FileInfo, error) { return os.Lstat(string(p)) }

func (p pathPlace) open(flag int) (*os.File, error) {
	return os.OpenFile(string(p), flag|noFollow, 0)
}

// rootPlace is a name beneath an os.Root.
type rootPlace struct {
	root *os.Root
	name string
}

func (p rootPlace) lstat() (fs.FileInfo, error) { return p.root.Lstat(p.name) }

func (p rootPlace) open(flag int) (*os.File, error) {
	return p.root.OpenFile(p.name, flag|noFollow, 0)
}

// openByName examines p (lstat), then opens it without following a link
// put there since and without waiting, and keeps it only when it is the
// very file examined. A node put in p between the two looks is opened
// before it is refused: openPlace comes here only where the system has no
// descriptor that opens nothing.
func openByName(p place) (*os.File, fs.FileInfo, error) {
	seen, err := p.lstat()
	if err != nil {
		return nil, nil, err
	}
	if !seen.Mode().IsRegular() {
		return nil, nil, ErrNotRegular
	}
	f, err := p.open(os.O_RDONLY | NoWait)
	if err != nil {
		if st, lerr := p.lstat(); lerr == nil && !st.Mode().IsRegular() {
			return nil, nil, ErrNotRegular // a link or a node put there since
		}
		return nil, nil, err
	}
	return keepExamined(f, seen)
}

// keepExamined returns f with what fstat shows of it, and blocking again,
// when it is a regular file and the file seen before it was opened; else
// it closes f: ErrNotRegular.
func keepExamined(f *os.File, seen fs.FileInfo) (*os.File, fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() || !os.SameFile(seen, st) {
		f.Close()
		return nil, nil, ErrNotRegular
	}
	// The file was opened without waiting (NoWait); its readers, and
	// whatever it is handed to, get an ordinary blocking file.
	if err := blocking(f); err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// LinkNew moves the complete, synced file tmp to out, never replacing a
// file there: it hard-links tmp to out, which fails when anything is at
// out (a link too, never followed), then removes tmp. Where the link
// fails otherwise (a file system without hard links: FAT, some network
// shares) it renames tmp only if nothing is at out, in one step where the
// system can (Linux renameat2 RENAME_NOREPLACE, darwin renamex_np
// RENAME_EXCL); elsewhere, or on a file system that cannot, it checks
// that out is absent, then renames: only there a file appearing between
// the check and the rename is replaced. A name taken is an error wrapping
// fs.ErrExist (tmp is left to the caller). Syncing the folder is the
// caller's (SyncDir).
func LinkNew(tmp, out string) error {
	err := os.Link(tmp, out)
	if err == nil {
		os.Remove(tmp) // out holds the file either way
		return nil
	}
	if errors.Is(err, fs.ErrExist) {
		return errTaken(out)
	}
	return renameNew(tmp, out)
}

// ErrNoUnnamed: a file without a name (CreateUnnamed) cannot be made
// here (another system, a kernel or file system without O_TMPFILE, no
// proc file system to link it through); the caller writes a named
// temporary file and moves it with LinkNew.
var ErrNoUnnamed = errors.New("regfile: no unnamed temporary file here")

// errTaken is LinkNew's refusal of a name taken.
func errTaken(out string) error {
	return &fs.PathError{Op: "link", Path: out, Err: fs.ErrExist}
}

// checkRename renames tmp to out after checking that nothing is at out:
// a file appearing between the two is replaced (renameNew where the
// system has no exclusive rename).
func checkRename(tmp, out string) error {
	if _, err := os.Lstat(out); err == nil {
		return errTaken(out)
	}
	return os.Rename(tmp, out)
}
