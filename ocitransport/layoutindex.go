package ocitransport

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"oras.land/oras-go/v2/content/oci"
)

// layoutStore is a layout folder opened for writing: oras-go's store,
// whose index.json it writes itself, by replace (a temporary file in the
// folder renamed over it), never in place, so a hard link or a file put
// there is replaced, not written through (docs/SPEC-DECISIONS.md OCI-15).
// The index it writes is oras-go's: one entry per tag (with the
// org.opencontainers.image.ref.name annotation), then one per manifest no
// tag names.
type layoutStore struct {
	*oci.Store
	root  string
	index ocispec.Index
}

// openLayoutStore opens the layout folder root (checked by checkLayoutDir
// and created by prepareLayoutDir first) for writing.
func openLayoutStore(ctx context.Context, root string) (*layoutStore, error) {
	if err := checkLayoutLinks(root); err != nil {
		return nil, err
	}
	st, err := oci.NewWithContext(ctx, root)
	if err != nil {
		return nil, fail(ErrLayout, "cannot open the OCI layout").WithCause(err)
	}
	st.AutoSaveIndex = false
	ls := &layoutStore{Store: st, root: root}
	f, err := openNoFollow(filepath.Join(root, ocispec.ImageIndexFile))
	if err != nil {
		return nil, fail(ErrLayout, "cannot read the OCI layout's index.json").WithCause(err)
	}
	defer f.Close()
	if err := json.NewDecoder(io.LimitReader(f, DefaultMaxManifestSize)).Decode(&ls.index); err != nil {
		return nil, fail(ErrLayout, "the OCI layout's index.json is malformed").WithCause(err)
	}
	return ls, nil
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

// Push pushes a blob or manifest; a manifest is listed in index.json.
func (l *layoutStore) Push(ctx context.Context, expected ocispec.Descriptor, content io.Reader) error {
	if err := l.Store.Push(ctx, expected, content); err != nil {
		return err
	}
	if !readByOras(expected.MediaType) {
		return nil
	}
	if listed(l.index.Manifests, expected) {
		return nil
	}
	l.index.Manifests = append(l.index.Manifests, ocispec.Descriptor{MediaType: expected.MediaType, Digest: expected.Digest, Size: expected.Size, ArtifactType: expected.ArtifactType})
	return l.save()
}

// Tag tags desc reference, in index.json: the entry of the tag replaces
// any other entry of the tag and the untagged entry of desc.
func (l *layoutStore) Tag(ctx context.Context, desc ocispec.Descriptor, reference string) error {
	if err := l.Store.Tag(ctx, desc, reference); err != nil {
		return err
	}
	var kept, moved []ocispec.Descriptor
	for _, d := range l.index.Manifests {
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
	l.index.Manifests = append(kept, entry)
	return l.save()
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

// save writes index.json by replace: a temporary file in the folder,
// synced, renamed over it.
func (l *layoutStore) save() (err error) {
	raw, err := json.Marshal(l.index)
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
