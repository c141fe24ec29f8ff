package ocitransport

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/internal/regfile"
)

// openTarDestination builds the layout in a temporary folder next to the
// tar (".NAME.layout-DIGITS", NAME the tar's name), held locked while it
// is in use, starting from the tar's current bundles (with their
// statements) when it exists. Commit writes the tar. Such folders of the
// tar that killed writers left are removed first (removeStaleTarTemps),
// and so are the house's temporary files a killed Commit or PullFile left
// in the folder (.ampbundle-ocitar-DIGITS.tmp and the like:
// bundlebuild.RemoveStaleTemps, stale and unlocked only).
//
// The tar's name is judged first, before anything is removed or made
// (tarTarget): a tar is written only over nothing or a regular file.
func openTarDestination(ctx context.Context, e *Endpoint) (*Endpoint, error) {
	if err := tarTarget(e.loc.Path); err != nil {
		return nil, err
	}
	dir, name := absDir(e.loc.Path), filepath.Base(e.loc.Path)
	removeStaleTarTemps(dir, name, e.o.Now(), e.o.fsType())
	bundlebuild.RemoveStaleTemps(dir, e.o.Now())
	tmp, err := os.MkdirTemp(dir, layoutTempPrefix(name)+"*")
	if err != nil {
		return nil, fail(ErrIO, "cannot create a temporary folder next to the tar").WithCause(err)
	}
	e.o.traced("made:tar-temp")
	if e.tmpRoot, err = holdNewFolder(dir, filepath.Base(tmp), e.o.fsType()); err != nil {
		// Not the folder just made: nothing at its name is touched, the
		// folder made (moved away, empty) is left.
		return nil, fail(ErrIO, "the temporary folder next to the tar was replaced as it was made").WithCause(err)
	}
	e.tmp = tmp
	if err := markWritersFolder(e.tmpRoot); err != nil {
		e.Close()
		return nil, fail(ErrIO, "cannot mark the temporary folder next to the tar").WithCause(err)
	}
	if d, err := e.tmpRoot.Open("."); err == nil { // the folder held, never its name again
		if ok, _ := tryLockFolder(d); ok {
			e.tmpLock = d
		} else {
			d.Close() // no lock here: its age alone keeps it (StaleLayoutTempAge)
		}
	}
	e.o.traced("held:tar-temp")
	// The writer works in the folder held, never one put at its name
	// since (OCI-32 amended).
	lf, err := layoutFoldersOf(e.tmpRoot)
	if err != nil {
		e.Close()
		return nil, fail(ErrIO, "cannot open the temporary folder next to the tar").WithCause(err)
	}
	st, err := openLayoutWriterOn(ctx, lf, &e.o)
	if err != nil {
		e.Close()
		return nil, err
	}
	e.src, e.dst, e.layout = st, st, st.lf
	if _, err := os.Stat(e.loc.Path); err != nil {
		return e, nil // a new tar
	}
	old, err := Open(ctx, Location{Kind: KindLayoutTar, Path: e.loc.Path}, e.o, ReadOnly)
	if err != nil {
		e.Close()
		return nil, err
	}
	defer old.Close()
	tags, err := old.Tags(ctx)
	if err != nil {
		e.Close()
		return nil, err
	}
	for _, t := range tags {
		if IsReferrersTag(t) {
			continue
		}
		if _, _, err := Copy(ctx, old, t, e, t); err != nil {
			e.Close()
			return nil, err
		}
	}
	return e, nil
}

// Commit writes a tar destination: the layout as a tar (oci-layout,
// index.json, blobs/, in name order, mode 0644, no time; read through the
// folders the endpoint holds, never its folder's path again: writeTar),
// into a temporary file, synced, renamed over the tar, and the tar's
// folder synced after the rename, so that the new name is durable when
// Commit returns (docs/SPEC-DECISIONS.md OCI-25, OCI-30). Nothing to do
// for other locations.
func (e *Endpoint) Commit() error {
	if e.tmp == "" {
		return nil
	}
	f, err := bundlebuild.CreateTemp(filepath.Dir(e.loc.Path), "ocitar")
	if err != nil {
		return fail(ErrIO, "cannot create the tar").WithCause(err)
	}
	err = writeTar(f, e.layout)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	renamed := false
	if err == nil {
		renamed, err = renameSynced(f.Name(), e.loc.Path, &e.o, "tar")
	}
	if err != nil && !renamed {
		os.Remove(f.Name())
		return fail(ErrIO, "cannot write the tar").WithCause(err)
	}
	if err != nil {
		e.Close()
		return fail(ErrIO, "the tar was written, but its folder could not be synced").WithCause(err)
	}
	return e.Close()
}

// tarTarget is the output rule (regfile.JudgeOutput,
// docs/SPEC-DECISIONS.md OCI-45) for a tar destination's name: nothing
// there or a regular file (OutputFile) is written beside and renamed
// over; anything else is io_error, never replaced: a folder, a socket or
// a block device, and also a character device, a FIFO, the literal
// /dev/null (OutputDiscard) or a name that stands for a descriptor
// (/dev/stdout: OutputOwn, or another process's: docs/SPEC-DECISIONS.md
// CLI-105), into which a tar could be written but not read back: a tar
// destination keeps the bundles the tar holds, and reading a device or a
// pipe to find them would run its driver or take a reader's bytes.
func tarTarget(path string) error {
	k, err := regfile.JudgeOutput(path)
	if err == nil && k == regfile.OutputFile {
		return nil
	}
	if err != nil && !errors.Is(err, regfile.ErrNotRegular) {
		return fail(ErrIO, "cannot examine the tar's name").WithCause(err)
	}
	return fail(ErrIO, "the tar's name holds no regular file (a folder, a device, a pipe or a socket); it is never replaced")
}

// errNotReplaced: renameSynced found at the name, just before the
// rename, something that is no regular file.
var errNotReplaced = errors.New("the name holds no regular file now; it is never replaced")

// renameSynced renames tmp, a complete file already synced, over path,
// then syncs the folder holding path (regfile.SyncDir), so that the new
// name is durable when it returns: a power loss cannot leave the old
// file, or none, at path after a success was reported
// (docs/SPEC-DECISIONS.md OCI-25, OCI-26). It serves a tar's Commit and
// PullFile; what names the file in o's trace ("renamed:WHAT",
// "synced:WHAT-folder"). renamed says whether path holds the file: true
// with an error when only the folder's sync failed.
//
// path is judged again just before the rename (regfile.JudgeOutput): the
// download or the tar's build may take minutes, and a node put at the
// name meanwhile (a device, a FIFO, a socket, a link to one) is never
// renamed over: errNotReplaced (docs/SPEC-DECISIONS.md OCI-45).
func renameSynced(tmp, path string, o *Options, what string) (renamed bool, err error) {
	if k, err := regfile.JudgeOutput(path); err != nil || k != regfile.OutputFile {
		if err == nil || errors.Is(err, regfile.ErrNotRegular) {
			err = errNotReplaced
		}
		return false, err
	}
	if err := os.Rename(tmp, path); err != nil {
		return false, err
	}
	o.traced("renamed:" + what)
	if err := regfile.SyncDir(filepath.Dir(path)); err != nil {
		return true, err
	}
	o.traced("synced:" + what + "-folder")
	return true, nil
}

// writeTar writes the layout lf, a tar destination's folder, as a tar:
// the folders blobs and blobs/sha256, each blob, index.json and
// oci-layout, in name order (mode 0644, no time). It reads through the
// folders the endpoint holds (layoutFolders: os.Roots, each file opened
// as a regular file that is no link, never waiting on a FIFO), never the
// folder's path again: in a tar's folder others may write, another user
// could rename the writer's folder away and put theirs at its name, and a
// walk of the path wrote into the tar, with the writer's rights, a file a
// link there named, what they chose in place of what was built, or waited
// forever on a FIFO (docs/SPEC-DECISIONS.md OCI-30). Only the layout's
// own names are written: a blob's (its digest's 64 hex digits), never a
// writer's temporary file or lock file.
func writeTar(w io.Writer, lf *layoutFolders) error {
	blobs, err := blobNames(lf.blobs)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	for _, d := range []string{"blobs/", "blobs/sha256/"} {
		if err := tw.WriteHeader(&tar.Header{Name: d, Mode: 0o755, Typeflag: tar.TypeDir, Format: tar.FormatPAX}); err != nil {
			return err
		}
	}
	buf := make([]byte, CopyBufferSize)
	for _, n := range blobs {
		if err := addTarEntry(tw, lf.blobs, n, "blobs/sha256/"+n, buf); err != nil {
			return err
		}
	}
	for _, n := range []string{ocispec.ImageIndexFile, ocispec.ImageLayoutFile} {
		if err := addTarEntry(tw, lf.top, n, n, buf); err != nil {
			return err
		}
	}
	return tw.Close()
}

// blobNames lists the blobs of the folder d (blobs/sha256) in name
// order: the names that are a sha256 digest's 64 lowercase hex digits,
// the others (a writer's .ingest-* files) left out.
func blobNames(d *layoutDir) ([]string, error) {
	f, err := d.list()
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var names []string
	for e, err := range dirEntries(f) {
		if err != nil {
			return nil, err
		}
		if digest.NewDigestFromEncoded(digest.SHA256, e.Name()).Validate() == nil {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	return names, nil
}

// addTarEntry writes the regular file name of d as the tar entry
// tarName, of the size its descriptor gives.
func addTarEntry(tw *tar.Writer, d *layoutDir, name, tarName string, buf []byte) error {
	f, err := d.open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return err
	}
	h := &tar.Header{Name: tarName, Mode: 0o644, Typeflag: tar.TypeReg, Size: st.Size(), Format: tar.FormatPAX}
	if err := tw.WriteHeader(h); err != nil {
		return err
	}
	_, err = io.CopyBuffer(tw, f, buf)
	return err
}

// holdNewFolder opens the folder name in dir that the caller has just
// made, through dir held (an os.Root: a link leading out of dir is not
// followed), and checks that it is that folder before anything uses it:
// a folder, not a link (Lstat within dir), the one opened (os.SameFile),
// of this user (regfile.ForeignOwner), empty, and, where the file system
// is known to keep modes (fsModesOf: modesKept), 0700: its mode is not
// judged on a volume that keeps none (FAT, exFAT, NTFS, SMB: a USB
// stick that crosses the air gap shows its mount's mask, 0755 or 0777,
// for any folder; OCI-37). Another user who may rename in dir (no sticky bit:
// OCI-25) and put a link, or a folder of this user's, at the name
// between its making and this open would otherwise have had it made a
// layout and emptied by Close (docs/SPEC-DECISIONS.md OCI-32 amended).
// statfs reads the file system's f_type (fsModesOf).
func holdNewFolder(dir, name string, statfs fsTypeOf) (*os.Root, error) {
	parent, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer parent.Close()
	named, err := parent.Lstat(name)
	if err != nil {
		return nil, err
	}
	root, err := parent.OpenRoot(name)
	if err != nil {
		return nil, err
	}
	held, err := root.Stat(".")
	if err == nil {
		err = checkNewFolder(root, named, held, statfs)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// checkNewFolder is holdNewFolder's check of the folder root holds,
// named being what Lstat found at its name and held what the open found.
func checkNewFolder(root *os.Root, named, held os.FileInfo, statfs fsTypeOf) error {
	if !named.IsDir() || !os.SameFile(named, held) {
		return errors.New("another folder or a link is at its name")
	}
	if uid, foreign := regfile.ForeignOwner(held); foreign {
		return fmt.Errorf("it is owned by another user (uid %d)", uid)
	}
	f, err := root.Open(".")
	if err != nil {
		return err
	}
	defer f.Close()
	// The rule of the stale cleaner (isWritersFolder): where the file
	// system is known to keep modes, the folder made is 0700
	// (os.MkdirTemp); one that group or others may use was put there
	// (OCI-37).
	if held.Mode().Perm()&0o077 != 0 && fsModesOf(f, statfs) == modesKept {
		return fmt.Errorf("others may use it (mode %#o)", held.Mode().Perm())
	}
	if _, err := f.Readdirnames(1); err != io.EOF {
		return errors.New("it is not empty")
	}
	return nil
}

// markWritersFolder puts tarBuildMarker in the build folder held as root,
// a new file (never one put there), empty: the mark by which
// removeStaleTarTemps knows a killed writer's folder where the file
// system keeps no modes (docs/SPEC-DECISIONS.md OCI-37).
func markWritersFolder(root *os.Root) error {
	f, err := root.OpenFile(tarBuildMarker, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	return f.Close()
}
