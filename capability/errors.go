package capability

import (
	"fmt"

	"github.com/ampbundle/ampbundle/amp"
)

// Error names of this package. Every error it returns is an *amp.Error. Its
// Code is the RFC 004 §9 code: 4001 for every name below except
// ErrInvalidJSON (1001); 4002 and 4003 carry the code's default name
// (capability_not_found, version_mismatch); bytes that are not valid CBOR
// keep amp's 1001 and amp's name.
//
// Like amp codes, the names are immutable errors.Is targets:
//
//	if errors.Is(err, capability.ErrIdentityConflict) { ... }
const (
	// ErrInvalidName: a capability name breaks the rules of §4.1 (see doc.go).
	ErrInvalidName amp.ErrName = "invalid_name"
	// ErrInvalidVersion: a string is not a strict SemVer 2.0.0 version.
	ErrInvalidVersion amp.ErrName = "invalid_version"
	// ErrInvalidID: a capability id is not name ":" version.
	ErrInvalidID amp.ErrName = "invalid_id"
	// ErrInvalidRange: a range is empty, too long, or malformed.
	ErrInvalidRange amp.ErrName = "invalid_range"
	// ErrUnsupportedRange: a range uses a form outside the §4.4 subset
	// (||, wildcards, ~, ^, hyphen ranges, !=, commas, partial or
	// v-prefixed versions). The message names the form.
	ErrUnsupportedRange amp.ErrName = "unsupported_range"
	// ErrMissingField: a required field is absent.
	ErrMissingField amp.ErrName = "missing_field"
	// ErrWrongType: a field holds a CBOR (or JSON) item of the wrong type.
	ErrWrongType amp.ErrName = "wrong_type"
	// ErrInvalidField: a field has the right type but a value the spec or
	// this package's rules do not allow (empty text, unknown hash_alg,
	// wrong hash length, unknown status or order, ...).
	ErrInvalidField amp.ErrName = "invalid_field"
	// ErrMissingLocator: a schema-ref lacks the locators its profile
	// requires (§4.2: uri, or bundle_id and artifact_key; §2.2 Offline
	// Registry Profile: bundle_id and artifact_key), or has only one of
	// bundle_id and artifact_key.
	ErrMissingLocator amp.ErrName = "missing_locator"
	// ErrIdentityMismatch: an id disagrees with the name and version
	// carried beside it (§4.2 descriptor id, §6.3 CAP_INVOKE).
	ErrIdentityMismatch amp.ErrName = "identity_mismatch"
	// ErrIdentityConflict: a CAP_INVOKE combines identification forms
	// that exclude each other (§7.4: id with negotiate; version with
	// negotiate).
	ErrIdentityConflict amp.ErrName = "identity_conflict"
	// ErrAmbiguousType: a legacy type matches the slug of several known
	// capability names.
	ErrAmbiguousType amp.ErrName = "ambiguous_type"
	// ErrInvalidJSON: JSON input (a descriptor's JSON form) is not one
	// valid JSON value. Its code is 1001, like malformed CBOR.
	ErrInvalidJSON amp.ErrName = "invalid_json"
)

// badRequest returns a 4001 error with the given name.
func badRequest(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(amp.CodeBadRequest, name, format, args...)
}

// fieldPath joins an object path and a key ("capabilities[0]" + "name").
func fieldPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// indexPath returns path[i].
func indexPath(path string, i int) string {
	return fmt.Sprintf("%s[%d]", path, i)
}
