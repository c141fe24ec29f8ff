package ocitransport

import (
	"errors"
	"io"
	"io/fs"
	"iter"
	"os"
	"path"
	"strings"
	"time"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// The temporary files of a layout's writer: a blob being written, in
// blobs/sha256, and index.json being replaced, in the root. No reader
// takes either for a layout's file.
const (
	ingestPrefix    = ".ingest-"
	indexTempPrefix = ".index.json-"
)

// StaleLayoutTempAge is how long a layout's temporary file (.ingest-* in
// blobs/sha256, .index.json-* in the root) must have gone unwritten
// before the next writer to open the layout removes it as one a killed
// writer left (docs/SPEC-DECISIONS.md OCI-24), and how long nothing in a
// layout tar's temporary folder (.NAME.layout-DIGITS, next to the tar)
// must have changed before the next writer of the tar removes it
// (removeStaleTarTemps, OCI-25). A live writer writes its file as its
// bytes arrive, so its time of last change is recent.
const StaleLayoutTempAge = 24 * time.Hour

// removeStaleTemps removes the temporary files of lf that a writer left
// (killed, or the system lost power) and has not written for
// StaleLayoutTempAge as of now: regular files only (a link is never
// followed, nor removed: the open refuses one among the blobs), by their
// own time of last change. A file another writer is still writing is
// younger; one removed anyway (a writer stalled that long) fails that
// writer's copy, io_error, and loses nothing of the layout. Failures are
// ignored: the files are left, as before.
func removeStaleTemps(lf *layoutFolders, now time.Time) {
	removeStaleIn(lf.top, indexTempPrefix, now)
	removeStaleIn(lf.blobs, ingestPrefix, now)
}

// removeStaleIn removes from d the regular files named prefix… unchanged
// for StaleLayoutTempAge as of now.
func removeStaleIn(d *layoutDir, prefix string, now time.Time) {
	if d == nil {
		return
	}
	f, err := d.list()
	if err != nil {
		return
	}
	defer f.Close()
	for e, err := range dirEntries(f) {
		if err != nil {
			return
		}
		if !strings.HasPrefix(e.Name(), prefix) || !e.Type().IsRegular() {
			continue
		}
		st, err := d.lstat(e.Name())
		if err == nil && st.Mode().IsRegular() && now.Sub(st.ModTime()) > StaleLayoutTempAge {
			d.remove(e.Name())
		}
	}
}

// dirEntries yields the entries of the open folder f, read 1,024 at a
// time (a folder of any size in bounded memory), and then, when reading
// stopped on anything but the folder's end, that error with a nil entry.
func dirEntries(f *os.File) iter.Seq2[fs.DirEntry, error] {
	return func(yield func(fs.DirEntry, error) bool) {
		for {
			ents, err := f.ReadDir(1024)
			for _, e := range ents {
				if !yield(e, nil) {
					return
				}
			}
			if err != nil {
				if !errors.Is(err, io.EOF) {
					yield(nil, err)
				}
				return
			}
		}
	}
}

// layoutTempPrefix is the start of the name of the temporary folder a
// tar destination named tarName is built in, next to it
// (openTarDestination): os.MkdirTemp adds the decimal digits of its "*".
func layoutTempPrefix(tarName string) string { return "." + tarName + ".layout-" }

// isLayoutTempName says whether name is exactly what os.MkdirTemp makes
// of layoutTempPrefix(tarName)+"*": the prefix, then 1 to 20 decimal
// digits, nothing else.
func isLayoutTempName(name, tarName string) bool {
	digits, ok := strings.CutPrefix(name, layoutTempPrefix(tarName))
	return ok && digits != "" && len(digits) <= 20 && strings.Trim(digits, "0123456789") == ""
}

// maxLayoutTempDepth bounds how deep removeStaleTarTemps looks into a
// temporary layout folder for its newest change: a layout's deepest file
// is blobs/sha256/NAME (3); a folder deeper than this is not one a
// writer made, and is left.
const maxLayoutTempDepth = 4

// removeStaleTarTemps removes from dir, the folder of the tar named
// tarName, the temporary layout folders (isLayoutTempName) a writer of
// that tar left (killed, or the system lost power) and no live writer
// holds: a folder (never a link, nor anything else) of this user's,
// the writer's by its mode or its mark (isWritersFolder, OCI-37), holding
// only a layout's names, whose lock (tryLockFolder) is free, nothing in which, itself included, has
// changed for StaleLayoutTempAge as of now (the newest time of last
// change found, lstat, nothing followed). dir is opened once, as a
// folder only ("dir/.": never waiting on a FIFO put there), and
// everything below is reached through that os.Root, never by its path
// again (docs/SPEC-DECISIONS.md OCI-26). A folder is removed below dir's
// own descriptor (os.Root.RemoveAll: unlinkat, each folder opened
// O_NOFOLLOW): a link inside is removed, never followed, and nothing
// outside the folder is touched. Failures are ignored: the folder is
// left, as before (docs/SPEC-DECISIONS.md OCI-25). statfs reads the file
// system's f_type (isWritersFolder).
func removeStaleTarTemps(dir, tarName string, now time.Time, statfs fsTypeOf) {
	root, err := os.OpenRoot(folderOnlyPath(dir))
	if err != nil {
		return
	}
	defer root.Close()
	f, err := root.Open(".")
	if err != nil {
		return
	}
	defer f.Close()
	for e, err := range dirEntries(f) {
		if err != nil {
			return
		}
		if e.Type().IsDir() && isLayoutTempName(e.Name(), tarName) {
			removeStaleTarTemp(root, e.Name(), now, statfs)
		}
	}
}

// removeStaleTarTemp removes the temporary layout folder name of root
// (the tar's folder) when it is stale (removeStaleTarTemps).
func removeStaleTarTemp(root *os.Root, name string, now time.Time, statfs fsTypeOf) {
	st, err := root.Lstat(name)
	// Only a folder as the writer makes it (this user's, and by
	// isWritersFolder its mode or, where the file system keeps no modes,
	// the writer's mark): in a tar's folder others may write (no sticky
	// bit), another user may rename any folder of ours there to the
	// writer's pattern, and we would remove it with our rights (OCI-26,
	// amended; OCI-37).
	if err != nil || !st.IsDir() || !regfile.OwnedBySelf(st) {
		return
	}
	// Opened as a folder only, and the very folder listed: its lock says
	// whether a live writer holds it.
	d, ok := openFolderIn(root, name, st)
	if !ok {
		return
	}
	defer d.Close() // the lock goes with it
	if !isWritersFolder(root, name, d, st, statfs) || !holdsOnlyLayout(d) {
		return
	}
	if ok, err := tryLockFolder(d); !ok && err == nil {
		return // a live writer's
	}
	newest, ok := newestChange(root, name, st, 1)
	if !ok || now.Sub(newest) <= StaleLayoutTempAge {
		return
	}
	if again, err := root.Lstat(name); err != nil || !os.SameFile(st, again) {
		return
	}
	root.RemoveAll(name)
}

// openFolderIn opens name below root (slash-separated), seen its lstat,
// as a folder only: through "name/.", which resolves only to a folder (a
// FIFO or a device put there since is refused, never opened nor waited
// on), never out of root, and kept only when it is the very folder seen
// (a link put there since is refused); ok is false otherwise.
func openFolderIn(root *os.Root, name string, seen fs.FileInfo) (f *os.File, ok bool) {
	f, err := root.Open(folderOnly(name))
	if err != nil {
		return nil, false
	}
	if st, err := f.Stat(); err != nil || !st.IsDir() || !os.SameFile(seen, st) {
		f.Close()
		return nil, false
	}
	return f, true
}

// newestChange is the newest time of last change of name, below root, st
// its lstat, and of everything in it: each entry by its own lstat, a link
// never followed, a folder opened only as a folder and only when it is
// the one lstat saw (openFolderIn); ok is false when it cannot be read
// whole, changed meanwhile, or is deeper than maxLayoutTempDepth.
func newestChange(root *os.Root, name string, st fs.FileInfo, depth int) (newest time.Time, ok bool) {
	newest = st.ModTime()
	if !st.IsDir() {
		return newest, true
	}
	if depth > maxLayoutTempDepth {
		return newest, false
	}
	f, ok := openFolderIn(root, name, st)
	if !ok {
		return newest, false // swapped meanwhile
	}
	defer f.Close()
	for e, err := range dirEntries(f) {
		if err != nil {
			return newest, false
		}
		p := path.Join(name, e.Name())
		est, err := root.Lstat(p)
		if err != nil {
			return newest, false
		}
		t, ok := newestChange(root, p, est, depth+1)
		if !ok {
			return newest, false
		}
		if t.After(newest) {
			newest = t
		}
	}
	return newest, true
}

// holdsOnlyLayout reports whether the folder d holds nothing but what a
// layout writer puts at a layout's top (oci-layout, index.json, its lock
// and temporary files, blobs, ingest, a tar writer's mark): a folder of
// ours renamed to the writer's pattern by someone else is not taken for
// one (OCI-26, amended).
func holdsOnlyLayout(d *os.File) bool {
	names, err := d.Readdirnames(65)
	if (err != nil && !errors.Is(err, io.EOF)) || len(names) > 64 {
		return false
	}
	for _, n := range names {
		switch {
		case n == "oci-layout", n == "index.json", n == LayoutLockFile, n == "blobs", n == "ingest", n == tarBuildMarker,
			strings.HasPrefix(n, indexTempPrefix):
		default:
			return false
		}
	}
	return true
}
