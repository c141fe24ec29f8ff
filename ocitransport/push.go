package ocitransport

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/bundle"
)

// referencePusher pushes a manifest and tags it in one request.
type referencePusher interface {
	PushReference(ctx context.Context, expected ocispec.Descriptor, content io.Reader, reference string) error
}

func (e *Endpoint) writable() error {
	if e.dst == nil {
		return fail(ErrLayout, "the location was opened read-only")
	}
	return nil
}

// pushIfAbsent pushes desc from r unless the destination has it. A
// registry has it when its HEAD answer names desc's size (and digest,
// when it names one): one that holds the digest at another size is
// damaged or lying, and pushing again does not mend it (a registry keeps
// the blob it holds under a digest), so the push is refused,
// oci_size_mismatch, and nothing is tagged (docs/SPEC-DECISIONS.md
// OCI-22).
func (e *Endpoint) pushIfAbsent(ctx context.Context, desc ocispec.Descriptor, open func() (io.Reader, error)) error {
	if e.repo != nil {
		held, err := e.registryHolds(ctx, desc)
		if err != nil || held {
			return err
		}
	} else if ok, err := e.src.Exists(ctx, desc); err == nil && ok {
		return nil
	}
	r, err := open()
	if err != nil {
		return err
	}
	if err := e.dst.Push(ctx, desc, r); err != nil {
		return wrap(err, "pushing a blob")
	}
	return nil
}

// registryHolds says whether the destination registry holds desc (a
// HEAD): a failed HEAD (a 404, a refused redirect, no Content-Length) is
// "not held", as before, and the blob is pushed; a held one of another
// size is oci_size_mismatch.
func (e *Endpoint) registryHolds(ctx context.Context, desc ocispec.Descriptor) (bool, error) {
	var r interface {
		Resolve(ctx context.Context, reference string) (ocispec.Descriptor, error)
	} = e.repo.Blobs()
	if readByOras(desc.MediaType) {
		r = e.repo.Manifests()
	}
	got, err := r.Resolve(ctx, desc.Digest.String())
	if err != nil {
		return false, nil
	}
	if got.Digest != desc.Digest || got.Size != desc.Size {
		return false, fail(ErrSize, "the destination registry says it holds a blob's digest at another size than the blob's: not pushed over, nothing tagged")
	}
	return true, nil
}

func (e *Endpoint) pushManifest(ctx context.Context, raw []byte, artifactType, tag string) (*Artifact, error) {
	desc := manifestDescriptor(raw, artifactType)
	a, err := DecodeManifest(raw, desc, e.o.MaxBlobSize)
	if err != nil {
		return nil, err // checked before anything is pushed
	}
	if err := e.pushIfAbsent(ctx, emptyConfig, func() (io.Reader, error) { return bytes.NewReader([]byte("{}")), nil }); err != nil {
		return nil, err
	}
	push := ocispec.Descriptor{MediaType: desc.MediaType, Digest: desc.Digest, Size: desc.Size}
	if rp, ok := e.dst.(referencePusher); ok && tag != "" {
		if err := rp.PushReference(ctx, push, bytes.NewReader(raw), tag); err != nil {
			return nil, wrap(err, "pushing the manifest")
		}
	} else {
		if err := e.pushIfAbsent(ctx, push, func() (io.Reader, error) { return bytes.NewReader(raw), nil }); err != nil {
			return nil, err
		}
		if tag != "" {
			if err := e.dst.Tag(ctx, push, tag); err != nil {
				return nil, wrap(err, "tagging the manifest")
			}
		}
	}
	return a, nil
}

// PushBundle pushes the bundle file f as one artifact (one layer, or
// layers of at most Options.MaxLayerSize) and tags it tag (none when
// empty). title names the file in the layers' annotations. f must be a
// bundle (its head is read for the bundle_id and version hints); it is
// read twice, once to hash it, once to send it, through one buffer.
func (e *Endpoint) PushBundle(ctx context.Context, f *os.File, title, tag string) (*Artifact, error) {
	if err := e.writable(); err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		return nil, fail(ErrIO, "cannot read the bundle").WithCause(err)
	}
	size := st.Size()
	if size <= 0 || size > e.o.MaxBlobSize {
		return nil, fail(ErrBlobTooBig, "the bundle is empty or larger than the %d-byte limit", e.o.MaxBlobSize)
	}
	in, err := bundle.Inspect(io.NewSectionReader(f, 0, size), 0)
	if err != nil {
		return nil, err
	}
	var layers []ocispec.Descriptor
	var sum []byte
	if e.repo != nil {
		// A registry: each layer is hashed as it is sent, one pass.
		layers, sum, err = e.streamLayers(ctx, f, size)
		if err != nil {
			return nil, err
		}
		raw := BundleManifest(layers, size, sum, title, in.Manifest.BundleID, in.Manifest.Version)
		return e.pushManifest(ctx, raw, ArtifactTypeBundle, tag)
	}
	if layers, sum, err = hashLayers(f, size, e.o.MaxLayerSize); err != nil {
		return nil, err
	}
	raw := BundleManifest(layers, size, sum, title, in.Manifest.BundleID, in.Manifest.Version)
	if _, err := DecodeManifest(raw, manifestDescriptor(raw, ArtifactTypeBundle), e.o.MaxBlobSize); err != nil {
		return nil, err // e.g. two equal parts: refused before any blob lands
	}
	var off int64
	for _, l := range layers {
		start := off
		sent := false
		// One layer: the file itself, which the HTTP client sends, on
		// Linux, without copying it through user space (sendfile).
		open := func() (io.Reader, error) {
			sent = true
			if len(layers) > 1 {
				return io.NewSectionReader(f, start, l.Size), nil
			}
			if _, err := f.Seek(0, io.SeekStart); err != nil {
				return nil, fail(ErrIO, "cannot read the bundle").WithCause(err)
			}
			return f, nil
		}
		if err := e.pushIfAbsent(ctx, l, open); err != nil {
			return nil, err
		}
		if !sent {
			// The layout had it: read back through its digest check
			// (another user of the folder may have put other bytes
			// under the name, OCI-22).
			if err := e.copyBlob(ctx, l, io.Discard, make([]byte, CopyBufferSize)); err != nil {
				return nil, err
			}
		}
		off += l.Size
	}
	return e.pushManifest(ctx, raw, ArtifactTypeBundle, tag)
}

// layerCut is how a bundle of size bytes is cut into layers of at most
// max bytes (one layer when max is 0 or not below size): the layer size,
// and the layers' media type (the whole file's for one layer, a part's
// for several). More than MaxLayers layers is oci_too_many.
func layerCut(size, max int64) (int64, string, error) {
	if max <= 0 || max >= size {
		max = size
	}
	if (size+max-1)/max > MaxLayers {
		return 0, "", optionRefusal(ErrTooMany, &OptionHint{Field: OptionMaxLayerSize,
			Refusal: fmt.Sprintf("the layer size cuts the bundle into more than %d layers", MaxLayers)})
	}
	if max == size {
		return max, MediaTypeBundleFile, nil
	}
	return max, MediaTypeBundlePart, nil
}

// hashLayers hashes f (size bytes) in one pass: the whole, and each layer
// of at most max bytes (one layer when max is 0 or not below size).
func hashLayers(f *os.File, size, max int64) ([]ocispec.Descriptor, []byte, error) {
	max, mt, err := layerCut(size, max)
	if err != nil {
		return nil, nil, err
	}
	whole := sha256.New()
	buf := make([]byte, CopyBufferSize)
	var layers []ocispec.Descriptor
	for off := int64(0); off < size; off += max {
		n := min(max, size-off)
		part := sha256.New()
		if _, err := io.CopyBuffer(io.MultiWriter(whole, part), io.NewSectionReader(f, off, n), buf); err != nil {
			return nil, nil, fail(ErrIO, "cannot read the bundle").WithCause(err)
		}
		layers = append(layers, ocispec.Descriptor{MediaType: mt, Digest: digest.NewDigest(digest.SHA256, part), Size: n})
	}
	return layers, whole.Sum(nil), nil
}

// PushStatement pushes the signed statement data (a revocation, trust or
// heartbeat statement) as an artifact whose subject is the bundle b. The
// statement is not verified here: the store that applies it verifies it.
func (e *Endpoint) PushStatement(ctx context.Context, data []byte, b *Artifact) (*Artifact, error) {
	if err := e.writable(); err != nil {
		return nil, err
	}
	if len(data) > MaxStatementSize {
		return nil, fail(ErrBlobTooBig, "the statement is larger than %d bytes", MaxStatementSize)
	}
	if b.Kind != KindBundle {
		return nil, fail(ErrNotBundle, "a statement's subject must be a bundle")
	}
	raw, layer, ok := StatementManifest(data, b.Descriptor)
	if !ok {
		return nil, fail(ErrUnsupportedKind, "the file is not a revocation, trust or heartbeat statement")
	}
	if err := e.pushIfAbsent(ctx, layer, func() (io.Reader, error) { return bytes.NewReader(data), nil }); err != nil {
		return nil, err
	}
	a, err := DecodeManifest(raw, manifestDescriptor(raw, ""), e.o.MaxBlobSize)
	if err != nil {
		return nil, err
	}
	return e.pushManifest(ctx, raw, a.Manifest.ArtifactType, "")
}

// Copy copies the bundle src names by ref, with its statements, to dst,
// tagged tag (none when empty): every manifest and blob read from src is
// bounded and verified as a pull is; manifests are copied byte for byte,
// so digests are kept. The bundle's manifest is pushed untagged and tagged
// last, once every statement landed: a copy that fails leaves no tag on a
// bundle missing some of its statements (docs/SPEC-DECISIONS.md OCI-14),
// at most blobs and untagged manifests a rerun reuses. It returns the
// bundle's artifact and the number of statements copied.
func Copy(ctx context.Context, src *Endpoint, ref string, dst *Endpoint, tag string) (*Artifact, int, error) {
	if err := dst.writable(); err != nil {
		return nil, 0, err
	}
	a, err := src.Resolve(ctx, ref)
	if err != nil {
		return nil, 0, err
	}
	if a.Kind != KindBundle {
		return nil, 0, fail(ErrNotBundle, "only a bundle (with its statements) is copied; this is a %s statement", a.Kind)
	}
	stmts, err := src.Statements(ctx, a)
	if err != nil {
		return nil, 0, err
	}
	if err := copyArtifact(ctx, src, dst, a); err != nil {
		return nil, 0, err
	}
	for _, s := range stmts {
		if err := copyArtifact(ctx, src, dst, s); err != nil {
			return nil, 0, err
		}
	}
	if tag != "" {
		if _, err := dst.pushManifest(ctx, a.Raw, a.Manifest.ArtifactType, tag); err != nil {
			return nil, 0, err
		}
	}
	return a, len(stmts), nil
}

// copyArtifact copies a's layers, then its manifest, untagged; a blob
// dst says it has is not sent (pushIfAbsent: a registry's only at the
// size of its descriptor, a layout's manifest or statement only when its
// file is its digest, OCI-22, OCI-24). A bundle cut into parts is checked
// as a pull checks it (checkFile) before its manifest lands: each part
// hashed in order as it streams from src, or, when dst has it already, as
// it is read again, verified: from dst when dst is a layout (a folder
// anyone may write to could hold other bytes under the name), from src
// when dst is a registry (which checked what it was sent against the
// digest; a read back needed its storage redirects allowed and downloaded
// the file) (docs/SPEC-DECISIONS.md OCI-17, amended in review 81). A
// bundle of one layer (the file: its digest is the file's SHA-256,
// DecodeManifest) that a layout destination has is read back from it
// through its digest check (OCI-22); from a registry that has it, nothing
// more is read. A statement's layer is sent or, when dst has it, checked
// as above. The layers are copied within one time budget (fileBudget:
// oci_too_slow past it).
func copyArtifact(ctx context.Context, src, dst *Endpoint, a *Artifact) error {
	var whole *hashWriter
	var buf []byte
	if a.Kind == KindBundle && len(a.Manifest.Layers) > 1 {
		whole, buf = &hashWriter{h: sha256.New()}, make([]byte, CopyBufferSize)
	}
	// One clock over every layer's requests, at the slower endpoint's
	// bounds (docs/SPEC-DECISIONS.md OCI-35).
	o := dst.o
	o.MinDataRate, o.Grace = min(o.MinDataRate, src.o.MinDataRate), max(o.Grace, src.o.Grace)
	bud := o.startBudget(ctx, "layers of a file", len(a.Manifest.Layers), layerBytes(a.Manifest.Layers), copyRequests)
	defer bud.stop()
	for _, l := range a.Manifest.Layers {
		if err := bud.check(); err != nil {
			return err
		}
		var br *blobReader
		err := dst.pushIfAbsent(bud.ctx, l, func() (io.Reader, error) {
			var err error
			if br, err = src.openBlob(bud.ctx, l); err != nil || whole == nil {
				return br, err
			}
			return io.TeeReader(br, whole), nil
		})
		if br != nil {
			br.Close()
		}
		switch {
		case err != nil || br != nil:
		case whole != nil: // dst had it
			from := dst
			if dst.repo != nil {
				from = src
			}
			err = from.copyBlob(bud.ctx, l, whole, buf)
		case a.Kind == KindBundle && dst.repo == nil:
			// A layout had the bundle's one layer: read back through
			// its digest check (OCI-22).
			err = dst.copyBlob(bud.ctx, l, io.Discard, make([]byte, CopyBufferSize))
		}
		if err != nil {
			return bud.failed(err)
		}
	}
	if whole != nil {
		if err := a.checkFile(whole); err != nil {
			return err
		}
	}
	_, err := dst.pushManifest(ctx, a.Raw, a.Manifest.ArtifactType, "")
	return err
}
