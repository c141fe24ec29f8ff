package ocitransport

import (
	"path/filepath"
	"regexp"
	"strings"

	"github.com/opencontainers/go-digest"
	"oras.land/oras-go/v2/registry"

	"github.com/ampbundle/ampbundle/amp"
)

// Artifact and media types (docs/FORMAT.md, "Bundles in OCI registries and
// layouts").
const (
	// ArtifactTypeBundle is the artifactType of a bundle's manifest.
	ArtifactTypeBundle = "application/vnd.ampbundle.bundle.v1+cbor"
	// MediaTypeBundleFile is the media type of the single layer that is
	// the whole bundle file (the bundle file's own media type).
	MediaTypeBundleFile = "application/ampbundle"
	// MediaTypeBundlePart is the media type of each layer of a bundle cut
	// into parts: consecutive slices of the file.
	MediaTypeBundlePart = "application/vnd.ampbundle.bundle.part.v1"
	// ArtifactTypeRevocation is the artifactType of a revocation statement.
	ArtifactTypeRevocation = "application/vnd.ampbundle.revocation.v1+cbor"
	// ArtifactTypeRotation is the artifactType of a trust (rotation) statement.
	ArtifactTypeRotation = "application/vnd.ampbundle.trust.v1+cbor"
	// ArtifactTypeHeartbeat is the artifactType of a heartbeat statement.
	ArtifactTypeHeartbeat = "application/vnd.ampbundle.heartbeat.v1+cbor"
	// MediaTypeEmptyConfig is the config of every manifest (OCI 1.1, the
	// empty descriptor).
	MediaTypeEmptyConfig = "application/vnd.oci.empty.v1+json"
)

// Annotations of a bundle's manifest.
const (
	// AnnotationFileSize is the bundle file's size in bytes (decimal).
	AnnotationFileSize = "vnd.ampbundle.file.size"
	// AnnotationFileSHA256 is the bundle file's SHA-256 (64 lowercase hex).
	AnnotationFileSHA256 = "vnd.ampbundle.file.sha256"
	// AnnotationBundleID is the bundle_id read from the file at push: an
	// unverified hint (the import verifies the file itself).
	AnnotationBundleID = "vnd.ampbundle.bundle_id"
	// AnnotationVersion is the version read from the file at push: an
	// unverified hint.
	AnnotationVersion = "vnd.ampbundle.version"
	// AnnotationTitle names the file of a layer (the OCI pre-defined key).
	AnnotationTitle = "org.opencontainers.image.title"
)

// Bounds and defaults.
const (
	// DefaultMaxManifestSize is the largest manifest read (4 MiB, the
	// distribution specification's minimum a registry must accept).
	DefaultMaxManifestSize = 4 << 20
	// DefaultMaxBlobSize is the largest bundle file or layer pulled by
	// default (4 GiB).
	DefaultMaxBlobSize = 4 << 30
	// DefaultMaxRedirects is the most redirects one request follows.
	DefaultMaxRedirects = 5
	// DefaultMaxTags is the most tags a sync lists.
	DefaultMaxTags = 10000
	// MaxLayers is the most layers a bundle's manifest may have.
	MaxLayers = 10000
	// MaxReferrers is the most statements read for one bundle.
	MaxReferrers = 1000
	// MaxSyncStatements is the most distinct statement manifests one
	// StatementCache (one sync) fetches: ten for each of DefaultMaxTags
	// bundles, each listing's share MaxSyncStatements over the bundles
	// (StatementCache.Share). Each is kept in at most 1,536 bytes
	// (StatementCache).
	MaxSyncStatements = 10 * DefaultMaxTags
	// MaxStatementSize is the largest statement blob (64 KiB; a statement
	// is one small CBOR item).
	MaxStatementSize = 64 << 10
	// MaxStatementManifestSize is the largest statement manifest read
	// (16 KiB; one a push writes is under 1 KiB): a referrer claiming
	// more is refused before it is fetched.
	MaxStatementManifestSize = 16 << 10
	// DefaultMinDataRate is the slowest a body may arrive once
	// DefaultGrace has passed, in bytes per second.
	DefaultMinDataRate = 128 << 10
)

// Error names (the code of the CLI's error document).
const (
	ErrReference       amp.ErrName = "oci_reference_invalid"
	ErrPlainHTTP       amp.ErrName = "oci_plain_http_refused"
	ErrRedirect        amp.ErrName = "oci_redirect_refused"
	ErrManifestTooBig  amp.ErrName = "oci_manifest_too_large"
	ErrBlobTooBig      amp.ErrName = "oci_blob_too_large"
	ErrDigest          amp.ErrName = "oci_digest_mismatch"
	ErrSize            amp.ErrName = "oci_size_mismatch"
	ErrManifest        amp.ErrName = "oci_manifest_invalid"
	ErrNotBundle       amp.ErrName = "oci_not_an_ampbundle_artifact"
	ErrNotFound        amp.ErrName = "oci_not_found"
	ErrRegistry        amp.ErrName = "oci_registry_error"
	ErrLayout          amp.ErrName = "oci_layout_error"
	ErrTooSlow         amp.ErrName = "oci_too_slow"
	ErrTooMany         amp.ErrName = "oci_too_many"
	ErrIO              amp.ErrName = "io_error"
	ErrAnnotation      amp.ErrName = "oci_annotation_mismatch"
	ErrCredentials     amp.ErrName = "oci_credentials_error"
	ErrUnsupportedKind amp.ErrName = "oci_unsupported_statement"
	ErrAuthHost        amp.ErrName = "oci_auth_host_refused"
)

func fail(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(0, name, format, args...)
}

// Kind is where a Location points.
type Kind int

// Kinds of Location.
const (
	KindRegistry  Kind = iota + 1 // oci://REGISTRY/REPO
	KindLayout                    // oci-layout:DIR
	KindLayoutTar                 // oci-layout:FILE.tar
)

// Location is a parsed oci:// or oci-layout: reference.
type Location struct {
	Kind Kind
	// Registry is host[:port] (KindRegistry).
	Registry string
	// Repository is the repository path (KindRegistry).
	Repository string
	// Path is the layout folder or tar file (KindLayout, KindLayoutTar).
	Path string
	// Reference is a tag, a digest ("sha256:…") or empty.
	Reference string
}

// Prefixes of the two location forms.
const (
	PrefixRegistry = "oci://"
	PrefixLayout   = "oci-layout:"
)

// IsLocation says whether s is meant as an OCI location (it may still be
// malformed: ParseLocation says).
func IsLocation(s string) bool {
	return strings.HasPrefix(s, PrefixRegistry) || strings.HasPrefix(s, PrefixLayout)
}

var tagRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$`)

// ValidTag says whether t is a valid OCI tag.
func ValidTag(t string) bool { return tagRE.MatchString(t) }

// maxLocationLen bounds what ParseLocation reads.
const maxLocationLen = 4096

// ParseLocation parses oci://REGISTRY/REPO[:TAG|@sha256:HEX],
// oci-layout:DIR[:TAG|@sha256:HEX] or oci-layout:FILE.tar[:TAG|@…].
func ParseLocation(s string) (Location, error) {
	if len(s) > maxLocationLen {
		return Location{}, fail(ErrReference, "the OCI reference is longer than %d bytes", maxLocationLen)
	}
	switch {
	case strings.HasPrefix(s, PrefixRegistry):
		return parseRegistry(strings.TrimPrefix(s, PrefixRegistry))
	case strings.HasPrefix(s, PrefixLayout):
		return parseLayout(strings.TrimPrefix(s, PrefixLayout))
	}
	return Location{}, fail(ErrReference, "an OCI reference starts with oci:// or oci-layout:")
}

func parseRegistry(rest string) (Location, error) {
	if strings.ContainsAny(rest, "?#\\ \t\r\n") || strings.Contains(rest, "://") {
		return Location{}, fail(ErrReference, "the OCI reference is malformed")
	}
	ref, err := registry.ParseReference(rest)
	if err != nil || ref.Repository == "" {
		return Location{}, fail(ErrReference, "the OCI reference is malformed: want oci://REGISTRY/REPO[:TAG|@sha256:HEX]")
	}
	if ref.Reference != "" {
		if d, derr := digest.Parse(ref.Reference); derr == nil {
			if d.Algorithm() != digest.SHA256 {
				return Location{}, fail(ErrReference, "only sha256 digests are accepted")
			}
		} else if !ValidTag(ref.Reference) {
			return Location{}, fail(ErrReference, "the OCI reference's tag is malformed")
		}
	}
	return Location{Kind: KindRegistry, Registry: ref.Registry, Repository: ref.Repository, Reference: ref.Reference}, nil
}

func parseLayout(rest string) (Location, error) {
	loc := Location{Kind: KindLayout, Path: rest}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		d, err := digest.Parse(rest[i+1:])
		if err != nil || d.Algorithm() != digest.SHA256 {
			return Location{}, fail(ErrReference, "the layout reference's digest is malformed: want @sha256:HEX")
		}
		loc.Path, loc.Reference = rest[:i], d.String()
	} else if i := strings.LastIndex(rest, ":"); i >= 0 && ValidTag(rest[i+1:]) && !strings.ContainsAny(rest[i+1:], `/\`) {
		loc.Path, loc.Reference = rest[:i], rest[i+1:]
	}
	if loc.Path == "" || strings.ContainsAny(loc.Path, "\x00\r\n") {
		return Location{}, fail(ErrReference, "the layout reference names no folder or tar file")
	}
	if strings.HasSuffix(strings.ToLower(loc.Path), ".tar") {
		loc.Kind = KindLayoutTar
	}
	loc.Path = filepath.Clean(loc.Path)
	return loc, nil
}

// String is the location in the form ParseLocation reads.
func (l Location) String() string {
	var s string
	if l.Kind == KindRegistry {
		s = PrefixRegistry + l.Registry + "/" + l.Repository
	} else {
		s = PrefixLayout + l.Path
	}
	switch {
	case l.Reference == "":
	case strings.HasPrefix(l.Reference, "sha256:"):
		s += "@" + l.Reference
	default:
		s += ":" + l.Reference
	}
	return s
}

// WithReference returns l naming ref instead.
func (l Location) WithReference(ref string) Location { l.Reference = ref; return l }

// IsDigest says whether the location names a digest.
func (l Location) IsDigest() bool { return strings.HasPrefix(l.Reference, "sha256:") }
