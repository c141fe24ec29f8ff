package ocitransport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"
)

// LayoutLockFile is the lock file a writer of a layout folder takes
// before it reads index.json to change it and until it replaced it
// (docs/FORMAT.md, "Bundles in OCI registries and layouts"): an empty
// file, flock'ed on Unix; elsewhere created and removed.
const LayoutLockFile = "index.json.lock"

// DefaultLayoutLockWait is how long a writer waits for another to release
// the layout's lock before giving up with oci_layout_error.
const DefaultLayoutLockWait = 30 * time.Second

// layoutLockPoll is how often a writer tries the held lock again.
const layoutLockPoll = 20 * time.Millisecond

// layoutStore is a layout folder opened for writing: oras-go's store,
// whose index.json it writes itself, by replace (a temporary file in the
// folder renamed over it), never in place, so a hard link or a file put
// there is replaced, not written through (docs/SPEC-DECISIONS.md OCI-15).
// Each change of index.json is made under the layout's lock file, on the
// index.json read under it, so two writers at once each keep the other's
// entries (OCI-14). The index it writes is oras-go's: one entry per tag
// (with the org.opencontainers.image.ref.name annotation), then one per
// manifest no tag names.
type layoutStore struct {
	*oci.Store
	root  string
	wait  time.Duration
	blobs *oci.ReadOnlyStorage // the folder's blobs, read through dirFiles (Fetch)

	mu    sync.Mutex
	index ocispec.Index // as last read or written
}

// openLayoutStore opens the layout folder root (checked by checkLayoutDir
// and created by prepareLayoutDir first) for writing; wait bounds the wait
// for its lock (DefaultLayoutLockWait when 0).
func openLayoutStore(ctx context.Context, root string, wait time.Duration) (*layoutStore, error) {
	if err := checkLayoutLinks(root); err != nil {
		return nil, err
	}
	st, err := oci.NewWithContext(ctx, root)
	if err != nil {
		return nil, fail(ErrLayout, "cannot open the OCI layout").WithCause(err)
	}
	st.AutoSaveIndex = false
	if wait <= 0 {
		wait = DefaultLayoutLockWait
	}
	ls := &layoutStore{Store: st, root: root, wait: wait, blobs: oci.NewStorageFromFS(dirFiles{root})}
	if ls.index, err = readLayoutIndex(root); err != nil {
		return nil, err
	}
	return ls, nil
}

// readLayoutIndex reads the layout's index.json, bounded.
func readLayoutIndex(root string) (ocispec.Index, error) {
	var idx ocispec.Index
	f, err := openNoFollow(filepath.Join(root, ocispec.ImageIndexFile))
	if err != nil {
		return idx, fail(ErrLayout, "cannot read the OCI layout's index.json").WithCause(err)
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, DefaultMaxManifestSize)).Decode(&idx); err != nil {
		return idx, fail(ErrLayout, "the OCI layout's index.json is malformed").WithCause(err)
	}
	return idx, nil
}

// lock takes the layout's lock file, waiting at most l.wait for another
// writer to release it.
func (l *layoutStore) lock(ctx context.Context) (func(), error) {
	p := filepath.Join(l.root, LayoutLockFile)
	deadline := time.Now().Add(l.wait)
	for {
		unlock, ok, err := tryLockFile(p)
		if err != nil {
			return nil, fail(ErrLayout, "cannot take the layout's lock file %s", LayoutLockFile).WithCause(err)
		}
		if ok {
			return unlock, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, fail(ErrLayout, "another writer held the layout's lock file %s for over %s (remove it only if no writer is left)", LayoutLockFile, l.wait)
		}
		t := time.NewTimer(min(left, layoutLockPoll))
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, wrap(ctx.Err(), "waiting for the layout's lock file")
		case <-t.C:
		}
	}
}

// update changes index.json under the layout's lock: change is applied to
// the index.json read under the lock, which is replaced when change says
// it changed it.
func (l *layoutStore) update(ctx context.Context, change func(idx *ocispec.Index) bool) error {
	unlock, err := l.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := checkLayoutLinks(l.root); err != nil {
		return err
	}
	idx, err := readLayoutIndex(l.root)
	if err != nil {
		return err
	}
	if change(&idx) {
		if err := l.save(idx); err != nil {
			return err
		}
	}
	l.mu.Lock()
	l.index = idx
	l.mu.Unlock()
	return nil
}

// Exists says whether the layout has target: for a manifest, that
// index.json lists it (with its file), so a manifest whose file a killed
// writer left unlisted is pushed, and listed, again (OCI-14); for any
// other blob, that its file is there.
func (l *layoutStore) Exists(ctx context.Context, target ocispec.Descriptor) (bool, error) {
	if readByOras(target.MediaType) {
		l.mu.Lock()
		ok := listed(l.index.Manifests, target)
		l.mu.Unlock()
		if !ok {
			return false, nil
		}
	}
	return l.Store.Exists(ctx, target)
}

// Fetch reads the blob target from the folder through dirFiles, as a
// layout opened to read is read, not through oras-go's os.DirFS, which
// follows a symbolic link and waits on a FIFO put there since the open.
func (l *layoutStore) Fetch(ctx context.Context, target ocispec.Descriptor) (io.ReadCloser, error) {
	return l.blobs.Fetch(ctx, target)
}

// checkLayoutLinks refuses a layout to write whose index.json or
// oci-layout has another name (a hard link, maybe to a file outside the
// folder): on Unix; elsewhere the link count is not known, and the
// replace still leaves the other name's file as it was.
func checkLayoutLinks(root string) error {
	for _, name := range []string{ocispec.ImageIndexFile, ocispec.ImageLayoutFile} {
		st, err := os.Lstat(filepath.Join(root, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fail(ErrLayout, "cannot read the OCI layout").WithCause(err)
		}
		if extraLinks(st) {
			return fail(ErrLayout, "the layout's %s has more than one link (a hard link): refused for writing", name)
		}
	}
	return nil
}

// Push pushes a blob or manifest; a manifest is listed in index.json. A
// file already there (a killed writer's, another writer's) is kept, and a
// manifest's is listed all the same.
func (l *layoutStore) Push(ctx context.Context, expected ocispec.Descriptor, content io.Reader) error {
	if err := l.Store.Push(ctx, expected, content); err != nil && !errors.Is(err, errdef.ErrAlreadyExists) {
		return err
	}
	if !readByOras(expected.MediaType) {
		return nil
	}
	return l.update(ctx, func(idx *ocispec.Index) bool {
		if listed(idx.Manifests, expected) {
			return false
		}
		idx.Manifests = append(idx.Manifests, ocispec.Descriptor{MediaType: expected.MediaType, Digest: expected.Digest, Size: expected.Size, ArtifactType: expected.ArtifactType})
		return true
	})
}

// Tag tags desc reference, in index.json: the entry of the tag replaces
// any other entry of the tag and the untagged entry of desc.
func (l *layoutStore) Tag(ctx context.Context, desc ocispec.Descriptor, reference string) error {
	if err := l.Store.Tag(ctx, desc, reference); err != nil {
		return err
	}
	return l.update(ctx, func(idx *ocispec.Index) bool {
		idx.Manifests = retag(idx.Manifests, desc, reference)
		return true
	})
}

// retag is index with desc tagged reference: the entry of the tag
// replaces any other entry of the tag and the untagged entry of desc.
func retag(index []ocispec.Descriptor, desc ocispec.Descriptor, reference string) []ocispec.Descriptor {
	var kept, moved []ocispec.Descriptor
	for _, d := range index {
		ref, tagged := d.Annotations[ocispec.AnnotationRefName]
		switch {
		case tagged && ref == reference:
			moved = append(moved, d)
		case !tagged && d.Digest == desc.Digest:
		default:
			kept = append(kept, d)
		}
	}
	// A manifest the tag named before stays listed, untagged, as oras-go
	// keeps it.
	for _, d := range moved {
		if d.Digest != desc.Digest && !listed(kept, d) {
			kept = append(kept, ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size, ArtifactType: d.ArtifactType})
		}
	}
	entry := desc
	entry.Annotations = map[string]string{ocispec.AnnotationRefName: reference}
	for k, v := range desc.Annotations {
		if k != ocispec.AnnotationRefName {
			entry.Annotations[k] = v
		}
	}
	return append(kept, entry)
}

// listed says whether an entry of index lists d's digest.
func listed(index []ocispec.Descriptor, d ocispec.Descriptor) bool {
	for _, e := range index {
		if e.Digest == d.Digest {
			return true
		}
	}
	return false
}

// save writes idx as index.json by replace: a temporary file in the
// folder, synced, renamed over it.
func (l *layoutStore) save(idx ocispec.Index) (err error) {
	raw, err := json.Marshal(idx)
	if err != nil {
		return fail(ErrLayout, "cannot write the OCI layout's index.json").WithCause(err)
	}
	f, err := os.CreateTemp(l.root, ".index.json-*")
	if err != nil {
		return fail(ErrIO, "cannot write the OCI layout's index.json").WithCause(err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(raw); err == nil {
		if err = f.Chmod(0o644); err == nil {
			err = f.Sync()
		}
	}
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = os.Rename(f.Name(), filepath.Join(l.root, ocispec.ImageIndexFile))
	}
	if err != nil {
		return fail(ErrIO, "cannot write the OCI layout's index.json").WithCause(err)
	}
	return nil
}
