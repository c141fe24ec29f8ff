package ocitransport

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"strconv"

	"github.com/opencontainers/go-digest"
	specs "github.com/opencontainers/image-spec/specs-go"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/limit"
)

// Statement kinds (Artifact.Kind).
const (
	KindBundle     = "bundle"
	KindRevocation = "revocation"
	KindRotation   = "trust"
	KindHeartbeat  = "heartbeat"
)

// statementTypes maps a statement's kind to its artifactType and to the
// media type of its one layer (the statement's own content type).
var statementTypes = [...]struct{ kind, artifactType, layerType string }{
	{KindRevocation, ArtifactTypeRevocation, bundle.MediaTypeRevocation},
	{KindRotation, ArtifactTypeRotation, bundle.MediaTypeRotation},
	{KindHeartbeat, ArtifactTypeHeartbeat, bundle.MediaTypeHeartbeat},
}

// emptyConfig is the OCI 1.1 empty descriptor, the config of every manifest.
var emptyConfig = ocispec.Descriptor{MediaType: MediaTypeEmptyConfig, Digest: digest.FromBytes([]byte("{}")), Size: 2, Data: []byte("{}")}

// Artifact is a manifest of ours whose bytes matched their descriptor and
// whose shape DecodeManifest checked. Nothing in it is trusted: the file or
// statement it leads to is verified by the store's import.
type Artifact struct {
	// Descriptor is the manifest's.
	Descriptor ocispec.Descriptor
	// Raw is the manifest, byte for byte.
	Raw []byte
	// Manifest is Raw decoded.
	Manifest ocispec.Manifest
	// Kind is KindBundle or a statement's kind.
	Kind string
	// FileSize and FileSHA256 describe the whole bundle file (KindBundle).
	FileSize   int64
	FileSHA256 []byte
	// BundleID and Version are the unverified hints of the annotations
	// (KindBundle; empty and 0 when absent).
	BundleID string
	Version  uint64
}

// Trimmed returns a copy of a holding only what a plan of many artifacts
// keeps of each, whatever the size of the manifest (up to
// MaxManifestSize, most of it annotations a plan has no use for): the
// descriptor's media type, digest, size and artifactType, the kind, the
// file's size and SHA-256 and the hints (BundleID only when
// bundle.ValidateBundleID accepts it, so at most a bundle_id's bound: an
// annotation of up to MaxManifestSize bytes is no hint), a statement's one
// layer and its subject (media type, digest, size). Raw, the annotations
// and a bundle's layers are left out: read the manifest again with
// Manifest (checked against the digest kept) before pulling the bundle.
func (a *Artifact) Trimmed() *Artifact {
	t := &Artifact{Descriptor: bareDescriptor(a.Descriptor), Kind: a.Kind, FileSize: a.FileSize,
		FileSHA256: bytes.Clone(a.FileSHA256), Version: a.Version}
	if bundle.ValidateBundleID(a.BundleID) == nil {
		t.BundleID = a.BundleID
	}
	t.Descriptor.ArtifactType = known(a.Descriptor.ArtifactType)
	t.Manifest = ocispec.Manifest{Versioned: a.Manifest.Versioned, MediaType: known(a.Manifest.MediaType), ArtifactType: known(a.Manifest.ArtifactType)}
	if a.Kind != KindBundle && len(a.Manifest.Layers) == 1 {
		t.Manifest.Layers = []ocispec.Descriptor{bareDescriptor(a.Manifest.Layers[0])}
	}
	if a.Manifest.Subject != nil {
		sub := bareDescriptor(*a.Manifest.Subject)
		t.Manifest.Subject = &sub
	}
	return t
}

// bareDescriptor is d's media type, digest and size.
func bareDescriptor(d ocispec.Descriptor) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: known(d.MediaType), Digest: d.Digest, Size: d.Size}
}

// known is s, as the constant it equals when it is a media or artifact
// type of ours: what many Trimmed artifacts keep of it is then shared.
func known(s string) string {
	switch s {
	case ocispec.MediaTypeImageManifest:
		return ocispec.MediaTypeImageManifest
	case ArtifactTypeBundle:
		return ArtifactTypeBundle
	}
	for _, t := range statementTypes {
		switch s {
		case t.artifactType:
			return t.artifactType
		case t.layerType:
			return t.layerType
		}
	}
	return s
}

// StatementKind returns the kind of the signed statement data (a
// revocation, trust or heartbeat statement), or "" when it is none.
func StatementKind(data []byte) string {
	ct := bundle.ContentType(data)
	for _, s := range statementTypes {
		if ct == s.layerType {
			return s.kind
		}
	}
	return ""
}

// BundleManifest returns the manifest of a bundle file of size bytes whose
// SHA-256 is sum, carried by layers (one MediaTypeBundleFile layer, or
// MediaTypeBundlePart layers that concatenated are the file). title, id and
// version are annotations (title on the layers; empty and 0 leave them out).
func BundleManifest(layers []ocispec.Descriptor, size int64, sum []byte, title, id string, version uint64) []byte {
	ann := map[string]string{AnnotationFileSize: strconv.FormatInt(size, 10), AnnotationFileSHA256: hex.EncodeToString(sum)}
	if id != "" {
		ann[AnnotationBundleID] = id
	}
	if version != 0 {
		ann[AnnotationVersion] = strconv.FormatUint(version, 10)
	}
	ls := make([]ocispec.Descriptor, len(layers))
	for i, l := range layers {
		ls[i] = ocispec.Descriptor{MediaType: l.MediaType, Digest: l.Digest, Size: l.Size}
		if title != "" {
			name := title
			if len(layers) > 1 {
				name = bundle.PartName(title, i+1, len(layers))
			}
			ls[i].Annotations = map[string]string{AnnotationTitle: name}
		}
	}
	return marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
		ArtifactType: ArtifactTypeBundle, Config: emptyConfig, Layers: ls, Annotations: ann})
}

// StatementManifest returns the manifest of the statement data whose
// subject is the bundle manifest subject. It returns "" when data is no
// statement.
func StatementManifest(data []byte, subject ocispec.Descriptor) ([]byte, ocispec.Descriptor, bool) {
	kind := StatementKind(data)
	for _, s := range statementTypes {
		if s.kind != kind {
			continue
		}
		layer := ocispec.Descriptor{MediaType: s.layerType, Digest: digest.FromBytes(data), Size: int64(len(data))}
		sub := ocispec.Descriptor{MediaType: subject.MediaType, Digest: subject.Digest, Size: subject.Size}
		raw := marshal(ocispec.Manifest{Versioned: specs.Versioned{SchemaVersion: 2}, MediaType: ocispec.MediaTypeImageManifest,
			ArtifactType: s.artifactType, Config: emptyConfig, Layers: []ocispec.Descriptor{layer}, Subject: &sub})
		return raw, layer, true
	}
	return nil, ocispec.Descriptor{}, false
}

func marshal(m ocispec.Manifest) []byte {
	m.Config.Data = nil
	raw, err := json.Marshal(m)
	if err != nil {
		panic("ocitransport: a manifest does not marshal: " + err.Error()) // fixed types: cannot happen
	}
	return raw
}

// manifestDescriptor is the descriptor of the manifest raw.
func manifestDescriptor(raw []byte, artifactType string) ocispec.Descriptor {
	return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromBytes(raw), Size: int64(len(raw)), ArtifactType: artifactType}
}

// DecodeManifest checks that data is a manifest of ours (docs/FORMAT.md,
// "Bundles in OCI registries and layouts") with no blob over maxBlob bytes
// (DefaultMaxBlobSize when 0 or less) and returns it. It reads nothing
// else: desc is the descriptor data matched.
func DecodeManifest(data []byte, desc ocispec.Descriptor, maxBlob int64) (*Artifact, error) {
	limit.Default(&maxBlob, DefaultMaxBlobSize)
	if len(data) > DefaultMaxManifestSize {
		return nil, fail(ErrManifestTooBig, "the manifest is larger than %d bytes", DefaultMaxManifestSize)
	}
	var m ocispec.Manifest
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&m); err != nil || dec.More() {
		return nil, fail(ErrManifest, "the manifest is not one JSON object of the image manifest schema")
	}
	if m.SchemaVersion != 2 || m.MediaType != ocispec.MediaTypeImageManifest {
		return nil, fail(ErrNotBundle, "not an OCI image manifest (schemaVersion 2, mediaType %s)", ocispec.MediaTypeImageManifest)
	}
	if m.Config.MediaType != MediaTypeEmptyConfig || m.Config.Digest != emptyConfig.Digest || m.Config.Size != 2 {
		return nil, fail(ErrManifest, "the manifest's config is not the empty descriptor")
	}
	a := &Artifact{Descriptor: desc, Raw: data, Manifest: m}
	a.Descriptor.ArtifactType = m.ArtifactType
	if m.ArtifactType == ArtifactTypeBundle {
		a.Kind = KindBundle
		return a, checkBundleManifest(a, maxBlob)
	}
	for _, s := range statementTypes {
		if m.ArtifactType == s.artifactType {
			a.Kind = s.kind
			return a, checkStatementManifest(a, s.layerType)
		}
	}
	return nil, fail(ErrNotBundle, "the artifact is not an ampbundle bundle or statement (artifactType)")
}

func checkLayer(l ocispec.Descriptor, maxBlob int64) error {
	if err := l.Digest.Validate(); err != nil || l.Digest.Algorithm() != digest.SHA256 {
		return fail(ErrManifest, "a layer's digest is not a valid sha256 digest")
	}
	if l.Size <= 0 {
		return fail(ErrManifest, "a layer is empty or its size is negative")
	}
	if l.Size > maxBlob {
		return fail(ErrBlobTooBig, "a layer is larger than the %d-byte limit", maxBlob)
	}
	return nil
}

func checkBundleManifest(a *Artifact, maxBlob int64) error {
	m := a.Manifest
	if m.Subject != nil {
		return fail(ErrManifest, "a bundle's manifest has a subject")
	}
	if len(m.Layers) == 0 || len(m.Layers) > MaxLayers {
		return fail(ErrManifest, "a bundle's manifest has %d layers (1 to %d)", len(m.Layers), MaxLayers)
	}
	size, err := strconv.ParseInt(m.Annotations[AnnotationFileSize], 10, 64)
	if err != nil || size <= 0 || strconv.FormatInt(size, 10) != m.Annotations[AnnotationFileSize] {
		return fail(ErrManifest, "the manifest's %s annotation is not a positive decimal", AnnotationFileSize)
	}
	if size > maxBlob {
		return fail(ErrBlobTooBig, "the bundle file is larger than the %d-byte limit", maxBlob)
	}
	sum, err := hex.DecodeString(m.Annotations[AnnotationFileSHA256])
	if err != nil || len(sum) != 32 || hex.EncodeToString(sum) != m.Annotations[AnnotationFileSHA256] {
		return fail(ErrManifest, "the manifest's %s annotation is not 64 lowercase hex digits", AnnotationFileSHA256)
	}
	want := MediaTypeBundlePart
	if len(m.Layers) == 1 {
		want = MediaTypeBundleFile
	}
	var total int64
	seen := make(map[digest.Digest]bool, len(m.Layers))
	for _, l := range m.Layers {
		if err := checkLayer(l, maxBlob); err != nil {
			return err
		}
		if l.MediaType != want {
			return fail(ErrManifest, "a layer's media type is not %s", want)
		}
		if seen[l.Digest] {
			// One blob listed again and again would make a small layout
			// or registry spool a file of up to the bundle bound.
			return fail(ErrManifest, "a bundle's manifest lists one layer digest twice")
		}
		seen[l.Digest] = true
		if l.Size > size-total { // total <= size: no sum that can wrap
			return fail(ErrManifest, "the layers' sizes do not add up to the file size")
		}
		total += l.Size
	}
	if total != size {
		return fail(ErrManifest, "the layers' sizes do not add up to the file size")
	}
	if len(m.Layers) == 1 && m.Layers[0].Digest.Encoded() != hex.EncodeToString(sum) {
		return fail(ErrManifest, "the one layer's digest is not the file's SHA-256")
	}
	a.FileSize, a.FileSHA256 = size, sum
	a.BundleID = m.Annotations[AnnotationBundleID]
	if v, ok := m.Annotations[AnnotationVersion]; ok {
		if a.Version, err = strconv.ParseUint(v, 10, 64); err != nil || a.Version == 0 {
			return fail(ErrManifest, "the manifest's %s annotation is not a positive decimal", AnnotationVersion)
		}
	}
	return nil
}

func checkStatementManifest(a *Artifact, layerType string) error {
	m := a.Manifest
	if len(m.Layers) != 1 {
		return fail(ErrManifest, "a statement's manifest has %d layers (want 1)", len(m.Layers))
	}
	if err := checkLayer(m.Layers[0], MaxStatementSize); err != nil {
		return err
	}
	if m.Layers[0].MediaType != layerType {
		return fail(ErrManifest, "a statement's layer media type is not %s", layerType)
	}
	if m.Subject == nil || m.Subject.MediaType != ocispec.MediaTypeImageManifest || m.Subject.Digest.Validate() != nil || m.Subject.Size <= 0 || m.Subject.Size > DefaultMaxManifestSize {
		return fail(ErrManifest, "a statement's manifest has no valid subject (the bundle's manifest)")
	}
	return nil
}
