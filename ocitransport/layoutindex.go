package ocitransport

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"
	"time"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
	"oras.land/oras-go/v2/errdef"

	"github.com/ampbundle/ampbundle/amp"
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

// layoutStore is a layout folder opened for writing. It reads the layout
// through oras-go's read-only store over dirFiles, as a layout opened to
// read is read, and writes every blob and manifest itself, through the
// layout's folders reached without following a link (layoutDir.sub), into
// a new file linked to its name: oras-go's writing store read back each
// manifest it had just written through its own os.DirFS, which follows a
// link and waits on a FIFO put at the name in that instant, and wrote
// through a blobs folder swapped for a link (docs/SPEC-DECISIONS.md
// OCI-21). index.json is written by replace (a temporary file in the
// folder renamed over it), never in place, so a hard link or a file put
// there is replaced, not written through (OCI-15). Each change of
// index.json is made under the layout's lock file, on the index.json read
// under it, so two writers at once each keep the other's entries
// (OCI-14). The index it writes is oras-go's: one entry per tag (with the
// org.opencontainers.image.ref.name annotation), then one per manifest no
// tag names.
type layoutStore struct {
	ro   *oci.ReadOnlyStore // the layout as opened, read through dirFiles
	lf   *layoutFolders     // its folders, opened once
	wait time.Duration
	// maxIndex bounds index.json when it is read again under the lock:
	// Options.MaxManifestSize, as at the open.
	maxIndex int64
	// maxEntries bounds its entries then: Options.MaxTags, as at the open
	// (checkLayout).
	maxEntries int
	// trace, when set (by a test), is told each step that orders the
	// layout's durability: "link" (a blob given its name), "sync" (the
	// blobs folder synced), "save" (index.json replaced).
	trace func(step string)

	mu    sync.Mutex
	index ocispec.Index // as last read or written
	// What this store wrote since it was opened: the manifests (by
	// digest), the nodes they point to (by the pointed-to digest) and the
	// tags it set, which ro, loaded at the open, does not know.
	pushed map[digest.Digest]ocispec.Descriptor
	preds  map[digest.Digest][]ocispec.Descriptor
	tags   map[string]ocispec.Descriptor
}

// openLayoutWriter opens the layout folder root for writing: its folders
// once (openLayoutFolders; a missing root is made first), checked
// (checkLayoutDir) before anything is written, then completed
// (prepareLayoutDir) and opened as a layoutStore.
func openLayoutWriter(ctx context.Context, root string, o *Options) (*layoutStore, error) {
	var index []byte
	lf, err := openLayoutFolders(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if err := makeLayoutRoot(root, o); err != nil {
			return nil, fail(ErrIO, "cannot create the OCI layout folder").WithCause(err)
		}
		if lf, err = openLayoutFolders(root); err != nil {
			return nil, layoutWriteError(err)
		}
	case err != nil:
		return nil, layoutReadError(err)
	default:
		return openLayoutWriterOn(ctx, lf, o)
	}
	ls, err := openLayoutStore(ctx, lf, o, index)
	if err != nil {
		lf.Close()
		return nil, err
	}
	return ls, nil
}

// openLayoutWriterOn is openLayoutWriter of the layout folders lf hold,
// which are there (checked as an open checks them); lf is closed on
// failure.
func openLayoutWriterOn(ctx context.Context, lf *layoutFolders, o *Options) (*layoutStore, error) {
	index, err := checkLayoutDir(lf, o)
	if err != nil {
		lf.Close()
		return nil, err
	}
	ls, err := openLayoutStore(ctx, lf, o, index)
	if err != nil {
		lf.Close()
		return nil, err
	}
	return ls, nil
}

// openLayoutStore opens the layout folder lf (checked by checkLayoutDir)
// for writing: index is the index.json checkLayoutDir checked, nil when
// there was none (the one prepareLayoutDir then creates is checked);
// o.LayoutLockWait bounds the wait for its lock (DefaultLayoutLockWait
// when 0). index.json is read once: the store's view of it is those
// bytes, never the file read again (docs/SPEC-DECISIONS.md OCI-24). The
// temporary files a killed writer left are removed
// (removeStaleTemps).
func openLayoutStore(ctx context.Context, lf *layoutFolders, o *Options, index []byte) (*layoutStore, error) {
	if err := checkLayoutLinks(lf.top); err != nil {
		return nil, err
	}
	if err := prepareLayoutDir(lf, o); err != nil {
		return nil, err
	}
	if index == nil {
		var err error
		if index, err = checkLayoutDir(lf, o); err != nil {
			return nil, err
		}
	}
	ro, err := oci.NewFromFS(ctx, dirFiles{lf: lf, pinned: true, index: index})
	if err != nil {
		return nil, layoutReadError(err)
	}
	wait := o.LayoutLockWait
	if wait <= 0 {
		wait = DefaultLayoutLockWait
	}
	ls := &layoutStore{ro: ro, lf: lf, wait: wait, maxIndex: o.MaxManifestSize, maxEntries: o.MaxTags, trace: o.trace, pushed: map[digest.Digest]ocispec.Descriptor{},
		preds: map[digest.Digest][]ocispec.Descriptor{}, tags: map[string]ocispec.Descriptor{}}
	if ls.index, err = decodeLayoutIndex(index); err != nil {
		return nil, err
	}
	removeStaleTemps(lf, o.Now())
	return ls, nil
}

// decodeLayoutIndex decodes the bytes of index.json (none: an empty
// index).
func decodeLayoutIndex(raw []byte) (ocispec.Index, error) {
	var idx ocispec.Index
	if raw == nil {
		return idx, nil
	}
	if err := json.Unmarshal(raw, &idx); err != nil {
		return idx, fail(ErrLayout, "the OCI layout's index.json is malformed").WithCause(err)
	}
	return idx, nil
}

// readLayoutIndex reads the layout's index.json again (under the lock),
// bounded as at the open: at most l.maxIndex bytes (the configured
// Options.MaxManifestSize) and l.maxEntries entries (Options.MaxTags),
// each member once, counted one descriptor at a time before it is
// decoded whole (decodeRefs). Another user of the folder may replace it
// after the open: 4 MiB of "{}," entries decoded as some 1.4 million
// descriptors, written back as an index.json no reader opens
// (docs/SPEC-DECISIONS.md OCI-33).
func (l *layoutStore) readLayoutIndex() (ocispec.Index, error) {
	f, err := l.lf.top.open(ocispec.ImageIndexFile)
	if err != nil {
		return ocispec.Index{}, fail(ErrLayout, "cannot read the OCI layout's index.json").WithCause(err)
	}
	defer f.Close()
	raw, err := io.ReadAll(io.LimitReader(f, l.maxIndex+1))
	if err != nil {
		return ocispec.Index{}, fail(ErrLayout, "cannot read the OCI layout's index.json").WithCause(err)
	}
	if int64(len(raw)) > l.maxIndex {
		return ocispec.Index{}, fail(ErrManifestTooBig, "the layout's index.json is larger than %d bytes", l.maxIndex)
	}
	if _, err := decodeRefs(raw, l.maxEntries, false); err != nil {
		return ocispec.Index{}, err
	}
	return decodeLayoutIndex(raw)
}

// lock takes the layout's lock file, waiting at most l.wait for another
// writer to release it.
func (l *layoutStore) lock(ctx context.Context) (func(), error) {
	deadline := time.Now().Add(l.wait)
	for {
		unlock, ok, err := tryLockFile(l.lf.top)
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
// it changed it, after blobs/sha256 is synced: every blob linked into it
// before (by this writer or another, killed before it synced) is durable
// before an index.json that may name it is (docs/SPEC-DECISIONS.md
// OCI-24).
func (l *layoutStore) update(ctx context.Context, change func(idx *ocispec.Index) bool) error {
	unlock, err := l.lock(ctx)
	if err != nil {
		return err
	}
	defer unlock()
	if err := checkLayoutLinks(l.lf.top); err != nil {
		return err
	}
	idx, err := l.readLayoutIndex()
	if err != nil {
		return err
	}
	if change(&idx) {
		if err := l.lf.blobs.sync(); err != nil {
			return fail(ErrIO, "cannot sync the OCI layout's blobs folder").WithCause(err)
		}
		l.traced("sync")
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
// other blob, that its file is there (a regular file, in folders that are
// no links).
func (l *layoutStore) Exists(ctx context.Context, target ocispec.Descriptor) (bool, error) {
	if readByOras(target.MediaType) {
		l.mu.Lock()
		ok := listed(l.index.Manifests, target)
		l.mu.Unlock()
		if !ok {
			return false, nil
		}
	}
	return l.hasFile(target)
}

// hasFile says whether the blob file of target is in the layout. A file
// of any blob but a bundle's layer (a manifest, a statement, the config:
// small) is hashed before it is taken for target: what another user of
// the folder put under a digest's name would otherwise be listed and
// tagged unread (oci_digest_mismatch, oci_size_mismatch;
// docs/SPEC-DECISIONS.md OCI-24). A bundle's layer is read back through
// its digest check by the copy or push that asked (OCI-17, OCI-22).
func (l *layoutStore) hasFile(target ocispec.Descriptor) (bool, error) {
	if target.Digest.Validate() != nil || target.Digest.Algorithm() != digest.SHA256 {
		return false, fail(ErrDigest, "a descriptor's digest is not a valid sha256 digest")
	}
	d := l.lf.blobs
	st, err := d.lstat(target.Digest.Encoded())
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, layoutReadError(err)
	}
	if !st.Mode().IsRegular() {
		return false, fail(ErrLayout, "a blob of the layout is a symbolic link or not a regular file")
	}
	if isBundleLayer(target.MediaType) {
		return true, nil
	}
	return true, checkBlobFile(d, target)
}

// isBundleLayer says whether mt is the media type of a bundle's layer.
func isBundleLayer(mt string) bool {
	return mt == MediaTypeBundleFile || mt == MediaTypeBundlePart
}

// checkBlobFile hashes the file of target in d against target's size and
// digest.
func checkBlobFile(d *layoutDir, target ocispec.Descriptor) error {
	f, err := d.open(target.Digest.Encoded())
	if err != nil {
		return layoutReadError(err)
	}
	defer f.Close()
	v := target.Digest.Verifier()
	n, err := io.Copy(v, io.LimitReader(f, target.Size+1))
	switch {
	case err != nil:
		return fail(ErrLayout, "cannot read the OCI layout").WithCause(err)
	case n != target.Size:
		return fail(ErrSize, "a file of the layout is not the size its descriptor says")
	case !v.Verified():
		return fail(ErrDigest, "a file of the layout does not match its digest")
	}
	return nil
}

// Fetch reads the blob target from the folder through dirFiles, as a
// layout opened to read is read, not through oras-go's os.DirFS, which
// follows a symbolic link and waits on a FIFO put there since the open.
func (l *layoutStore) Fetch(ctx context.Context, target ocispec.Descriptor) (io.ReadCloser, error) {
	return l.ro.Fetch(ctx, target)
}

// Resolve resolves a tag or a manifest's digest: as this store set or
// pushed it, else as the layout was when it was opened.
func (l *layoutStore) Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error) {
	l.mu.Lock()
	d, tagged := l.tags[reference]
	p, pushed := l.pushed[digest.Digest(reference)]
	l.mu.Unlock()
	switch {
	case tagged:
		return d, nil
	case pushed:
		return ocispec.Descriptor{MediaType: p.MediaType, Digest: p.Digest, Size: p.Size}, nil
	}
	return l.ro.Resolve(ctx, reference)
}

// Predecessors lists the manifests pointing to node: those of the layout
// when it was opened and those this store pushed since.
func (l *layoutStore) Predecessors(ctx context.Context, node ocispec.Descriptor) ([]ocispec.Descriptor, error) {
	out, err := l.ro.Predecessors(ctx, node)
	if err != nil {
		return nil, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, p := range l.preds[node.Digest] {
		if !listed(out, p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Tags lists the layout's tags, in ascending order, after last: those of
// the layout when it was opened and those this store set since.
func (l *layoutStore) Tags(ctx context.Context, last string, fn func(tags []string) error) error {
	seen := map[string]bool{}
	var all []string
	if err := l.ro.Tags(ctx, "", func(tags []string) error {
		for _, t := range tags {
			if !seen[t] {
				seen[t] = true
				all = append(all, t)
			}
		}
		return nil
	}); err != nil {
		return err
	}
	l.mu.Lock()
	for t := range l.tags {
		if !seen[t] {
			seen[t] = true
			all = append(all, t)
		}
	}
	l.mu.Unlock()
	slices.Sort(all)
	var after []string
	for _, t := range all {
		if t > last {
			after = append(after, t)
		}
	}
	if len(after) == 0 {
		return nil
	}
	return fn(after)
}

// checkLayoutLinks refuses a layout to write whose index.json or
// oci-layout has another name (a hard link, maybe to a file outside the
// folder): on Unix; elsewhere the link count is not known, and the
// replace still leaves the other name's file as it was.
func checkLayoutLinks(top *layoutDir) error {
	for _, name := range []string{ocispec.ImageIndexFile, ocispec.ImageLayoutFile} {
		st, err := top.lstat(name)
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
// manifest's is listed all the same. A manifest is read whole (at most
// DefaultMaxManifestSize), checked, written and indexed from those bytes:
// nothing written is read back.
func (l *layoutStore) Push(ctx context.Context, expected ocispec.Descriptor, content io.Reader) error {
	if !readByOras(expected.MediaType) {
		return l.putBlob(expected, content)
	}
	if expected.Size < 0 || expected.Size > DefaultMaxManifestSize {
		return fail(ErrManifestTooBig, "a manifest is larger than %d bytes", DefaultMaxManifestSize)
	}
	raw := make([]byte, expected.Size)
	if _, err := io.ReadFull(content, raw); err != nil {
		return fail(ErrIO, "cannot read the manifest to write").WithCause(err)
	}
	if digest.SHA256.FromBytes(raw) != expected.Digest {
		return fail(ErrDigest, "a manifest does not match its digest")
	}
	children, err := decodeRefs(raw, maxRefsPerDocument, true)
	if err != nil {
		return err
	}
	if err := l.putBlob(expected, bytes.NewReader(raw)); err != nil {
		return err
	}
	node := ocispec.Descriptor{MediaType: expected.MediaType, Digest: expected.Digest, Size: expected.Size, ArtifactType: expected.ArtifactType}
	l.mu.Lock()
	if _, ok := l.pushed[expected.Digest]; !ok {
		l.pushed[expected.Digest] = node
		for _, ch := range children {
			if !listed(l.preds[ch.Digest], node) {
				l.preds[ch.Digest] = append(l.preds[ch.Digest], node)
			}
		}
	}
	l.mu.Unlock()
	return l.update(ctx, func(idx *ocispec.Index) bool {
		if listed(idx.Manifests, expected) {
			return false
		}
		idx.Manifests = append(idx.Manifests, node)
		return true
	})
}

// putBlob writes the blob expected from r into blobs/sha256, reached
// without following a link (layoutDir.sub): into a new file in that
// folder, checked against its size and digest, synced, then linked to its
// name, which replaces nothing (a file there, a killed or another
// writer's, is kept).
func (l *layoutStore) putBlob(expected ocispec.Descriptor, r io.Reader) (err error) {
	if expected.Digest.Validate() != nil || expected.Digest.Algorithm() != digest.SHA256 {
		return fail(ErrDigest, "a descriptor's digest is not a valid sha256 digest")
	}
	d := l.lf.blobs
	name := expected.Digest.Encoded()
	if st, err := d.lstat(name); err == nil {
		if !st.Mode().IsRegular() {
			return fail(ErrLayout, "a blob of the layout is a symbolic link or not a regular file")
		}
		if isBundleLayer(expected.MediaType) {
			return nil // read back by the copy or push (OCI-22)
		}
		return checkBlobFile(d, expected)
	}
	f, tmp, err := d.createTemp(ingestPrefix)
	if err != nil {
		return layoutWriteError(err)
	}
	defer func() {
		if f != nil {
			f.Close()
		}
		if err != nil {
			d.remove(tmp)
		}
	}()
	v := expected.Digest.Verifier()
	n, err := io.CopyBuffer(io.MultiWriter(f, v), io.LimitReader(r, expected.Size+1), make([]byte, CopyBufferSize))
	switch {
	case err != nil:
		return layoutWriteError(err) // the source's named error kept
	case n != expected.Size:
		return fail(ErrSize, "a blob is not the size its descriptor says")
	case !v.Verified():
		return fail(ErrDigest, "a blob does not match its digest")
	}
	if err = f.Chmod(0o444); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	f = nil
	if err != nil {
		return fail(ErrIO, "cannot write a blob of the OCI layout").WithCause(err)
	}
	if err = d.linkNew(tmp, name); errors.Is(err, fs.ErrExist) {
		err = d.remove(tmp) // another writer's file: kept
		if err == nil && !isBundleLayer(expected.MediaType) {
			return checkBlobFile(d, expected)
		}
	}
	if err != nil {
		return fail(ErrIO, "cannot write a blob of the OCI layout").WithCause(err)
	}
	l.traced("link")
	return nil
}

// traced tells l.trace (a test's) of step.
func (l *layoutStore) traced(step string) {
	if l.trace != nil {
		l.trace(step)
	}
}

// layoutWriteError keeps a named refusal, else names err io_error.
func layoutWriteError(err error) error {
	var ae *amp.Error
	if errors.As(err, &ae) {
		return err
	}
	return fail(ErrIO, "cannot write the OCI layout").WithCause(err)
}

// Tag tags desc reference, in index.json: the entry of the tag replaces
// any other entry of the tag and the untagged entry of desc. desc's file
// must be in the layout.
func (l *layoutStore) Tag(ctx context.Context, desc ocispec.Descriptor, reference string) error {
	if reference == "" {
		return errdef.ErrMissingReference
	}
	ok, err := l.hasFile(desc)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%s: %w", desc.MediaType, errdef.ErrNotFound)
	}
	if err := l.update(ctx, func(idx *ocispec.Index) bool {
		idx.Manifests = retag(idx.Manifests, desc, reference)
		return true
	}); err != nil {
		return err
	}
	l.mu.Lock()
	l.tags[reference] = desc
	l.mu.Unlock()
	return nil
}

// retag is index with desc tagged reference: the entry of the tag
// replaces any other entry of the tag and the untagged entry of desc.
// index (the caller's, decoded for this write) is filtered in place,
// its entries not copied to a second list, and read once, then once more
// only when the tag named entries before: looking each of those up among
// the entries kept cost a scan of the index apiece, some 50 million
// digest comparisons for one write to an index of 10,000 entries of one
// tag (docs/SPEC-DECISIONS.md OCI-43). The entries and their order are
// oras-go's, as before.
func retag(index []ocispec.Descriptor, desc ocispec.Descriptor, reference string) []ocispec.Descriptor {
	var moved []ocispec.Descriptor
	kept := index[:0]
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
	// A manifest the tag named before stays listed, untagged, once, as
	// oras-go keeps it: has says which of those digests is listed already.
	if len(moved) > 0 {
		has := make(map[digest.Digest]bool, len(moved))
		for _, d := range moved {
			has[d.Digest] = d.Digest == desc.Digest
		}
		for _, d := range kept {
			if _, ok := has[d.Digest]; ok {
				has[d.Digest] = true
			}
		}
		for _, d := range moved {
			if !has[d.Digest] {
				has[d.Digest] = true
				kept = append(kept, ocispec.Descriptor{MediaType: d.MediaType, Digest: d.Digest, Size: d.Size, ArtifactType: d.ArtifactType})
			}
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
// folder, synced, renamed over it; the folder is then synced, so the new
// index.json outlives a crash.
func (l *layoutStore) save(idx ocispec.Index) (err error) {
	raw, err := json.Marshal(idx)
	if err != nil {
		return fail(ErrLayout, "cannot write the OCI layout's index.json").WithCause(err)
	}
	top := l.lf.top
	f, tmp, err := top.createTemp(indexTempPrefix)
	if err != nil {
		return fail(ErrIO, "cannot write the OCI layout's index.json").WithCause(err)
	}
	defer func() {
		if err != nil {
			f.Close()
			top.remove(tmp)
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
		err = top.rename(tmp, ocispec.ImageIndexFile)
	}
	if err == nil {
		l.traced("save")
		err = top.sync()
	}
	if err != nil {
		return fail(ErrIO, "cannot write the OCI layout's index.json").WithCause(err)
	}
	return nil
}
