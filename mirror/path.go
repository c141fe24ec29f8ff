package mirror

import (
	"strings"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// Paths served by the mirror.
const (
	// WellKnownPath is the capabilities document (docs/FORMAT.md).
	WellKnownPath = "/.well-known/ampbundle-registry.json"
	// IndexPath is the index of what the mirror serves.
	IndexPath = "/index.json"
	// BundlesPrefix precedes a bundle_id: /bundles/{bundle_id}.
	BundlesPrefix = "/bundles/"
	// StatementsPrefix precedes the lowercase hex SHA-256 of a signed
	// trust or revocation statement: /statements/{sha256}.
	StatementsPrefix = "/statements/"
	// RegistryPrefix precedes the RFC 004 §5.1 paths:
	// /cap-registry/{capability-name}/{version}/{file}.
	RegistryPrefix = "/cap-registry/"
)

// Files of a capability version under RegistryPrefix (RFC 004 §5.1, plus
// the JSON form of the descriptor).
const (
	FileDescriptorCBOR = "descriptor.cbor"
	FileDescriptorJSON = "descriptor.json"
	FileInputSchema    = "input.schema.json"
	FileOutputSchema   = "output.schema.json"
)

// maxPathLen bounds the request path looked at; a longer one is not_found.
const maxPathLen = 1024

// Route is a parsed request path.
type Route struct {
	Kind     RouteKind
	BundleID string        // RouteBundle
	SHA256   string        // RouteStatement: 64 lowercase hex
	ID       capability.ID // RouteCapability
	File     string        // RouteCapability: one of the File* names
}

// RouteKind says what a path names.
type RouteKind uint8

// Route kinds.
const (
	RouteNone RouteKind = iota
	RouteWellKnown
	RouteIndex
	RouteBundle
	RouteCapability
	RouteStatement
)

// ParseRoute maps a request path (already unescaped, as in
// http.Request.URL.Path) to what it names. Anything that is not exactly one
// of the documented forms, with a valid bundle_id or capability name and
// SemVer version, is RouteNone: no normalisation, no "..", no trailing
// slash, no empty segment.
func ParseRoute(p string) Route {
	if len(p) > maxPathLen {
		return Route{}
	}
	switch p {
	case WellKnownPath:
		return Route{Kind: RouteWellKnown}
	case IndexPath:
		return Route{Kind: RouteIndex}
	}
	if id, ok := strings.CutPrefix(p, BundlesPrefix); ok {
		if bundle.ValidateBundleID(id) != nil {
			return Route{}
		}
		return Route{Kind: RouteBundle, BundleID: id}
	}
	if h, ok := strings.CutPrefix(p, StatementsPrefix); ok {
		if !isLowerHex64(h) {
			return Route{}
		}
		return Route{Kind: RouteStatement, SHA256: h}
	}
	rest, ok := strings.CutPrefix(p, RegistryPrefix)
	if !ok {
		return Route{}
	}
	parts := strings.Split(rest, "/")
	if len(parts) != 3 {
		return Route{}
	}
	switch parts[2] {
	case FileDescriptorCBOR, FileDescriptorJSON, FileInputSchema, FileOutputSchema:
	default:
		return Route{}
	}
	if capability.ValidateName(parts[0]) != nil {
		return Route{}
	}
	v, err := capability.ParseVersion(parts[1])
	if err != nil || v.String() != parts[1] {
		return Route{}
	}
	return Route{Kind: RouteCapability, ID: capability.ID{Name: parts[0], Version: v}, File: parts[2]}
}

// CapabilityPath returns the RFC 004 §5.1 path of file for id.
func CapabilityPath(id capability.ID, file string) string {
	return RegistryPrefix + id.Name + "/" + id.Version.String() + "/" + file
}

// isLowerHex64 reports whether s is 64 lowercase hex digits (a SHA-256).
func isLowerHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
