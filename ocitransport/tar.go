package ocitransport

import (
	"archive/tar"
	"context"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

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
func openTarDestination(ctx context.Context, e *Endpoint) (*Endpoint, error) {
	dir, name := absDir(e.loc.Path), filepath.Base(e.loc.Path)
	removeStaleTarTemps(dir, name, e.o.Now())
	bundlebuild.RemoveStaleTemps(dir, e.o.Now())
	tmp, err := os.MkdirTemp(dir, layoutTempPrefix(name)+"*")
	if err != nil {
		return nil, fail(ErrIO, "cannot create a temporary folder next to the tar").WithCause(err)
	}
	e.tmp = tmp
	if d, err := regfile.OpenFolder(tmp, regfile.NoLinks); err == nil {
		if ok, _ := tryLockFolder(d); ok {
			e.tmpLock = d
		} else {
			d.Close() // no lock here: its age alone keeps it (StaleLayoutTempAge)
		}
	}
	st, err := openLayoutWriter(ctx, tmp, &e.o)
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
// index.json, blobs/, in name order, mode 0644, no time), into a
// temporary file, synced, renamed over the tar, and the tar's folder
// synced after the rename, so that the new name is durable when Commit
// returns (docs/SPEC-DECISIONS.md OCI-25). Nothing to do for other
// locations.
func (e *Endpoint) Commit() error {
	if e.tmp == "" {
		return nil
	}
	f, err := bundlebuild.CreateTemp(filepath.Dir(e.loc.Path), "ocitar")
	if err != nil {
		return fail(ErrIO, "cannot create the tar").WithCause(err)
	}
	err = writeTar(f, e.tmp)
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

// renameSynced renames tmp, a complete file already synced, over path,
// then syncs the folder holding path (regfile.SyncDir), so that the new
// name is durable when it returns: a power loss cannot leave the old
// file, or none, at path after a success was reported
// (docs/SPEC-DECISIONS.md OCI-25, OCI-26). It serves a tar's Commit and
// PullFile; what names the file in o's trace ("renamed:WHAT",
// "synced:WHAT-folder"). renamed says whether path holds the file: true
// with an error when only the folder's sync failed.
func renameSynced(tmp, path string, o *Options, what string) (renamed bool, err error) {
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

func writeTar(w io.Writer, root string) error {
	var names []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil || rel == "." || rel == LayoutLockFile || rel == "ingest" || filepath.Dir(rel) == "ingest" {
			if d.IsDir() && rel == "ingest" {
				return filepath.SkipDir
			}
			return err
		}
		names = append(names, rel)
		return nil
	})
	if err != nil {
		return err
	}
	sort.Strings(names)
	tw := tar.NewWriter(w)
	buf := make([]byte, CopyBufferSize)
	for _, n := range names {
		if err := addTarEntry(tw, root, n, buf); err != nil {
			return err
		}
	}
	return tw.Close()
}

func addTarEntry(tw *tar.Writer, root, name string, buf []byte) error {
	p := filepath.Join(root, name)
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	h := &tar.Header{Name: filepath.ToSlash(name), Mode: 0o644, Typeflag: tar.TypeReg, Size: st.Size(), Format: tar.FormatPAX}
	if st.IsDir() {
		h = &tar.Header{Name: filepath.ToSlash(name) + "/", Mode: 0o755, Typeflag: tar.TypeDir, Format: tar.FormatPAX}
	}
	if err := tw.WriteHeader(h); err != nil || st.IsDir() {
		return err
	}
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	defer f.Close()
	_, err = io.CopyBuffer(tw, f, buf)
	return err
}
