package offlineschema

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// Error names of this package. Every error it returns is an *amp.Error with
// one of these names. Errors whose AMP code depends on the caller carry
// code 0 (the resolver maps unresolved_ref and invalid_schema to 5002
// UNAVAILABLE, RFC 004 §5.3); errors about a peer's value carry 4004.
//
// The names are immutable errors.Is targets:
//
//	if errors.Is(err, offlineschema.ErrUnresolvedRef) { ... }
const (
	// ErrUnresolvedRef (code 0): a reference (or the root key) does not
	// name an artifact of this bundle, the Loader failed to supply it, or a
	// JSON pointer or anchor inside a loaded document does not exist. The
	// Loader's error, if any, is kept as the cause.
	ErrUnresolvedRef amp.ErrName = "unresolved_ref"
	// ErrInvalidSchema (code 0): an artifact is not JSON, is not a valid
	// schema of its draft, uses an unknown format or an unsupported pattern,
	// loops, or declares an anchor name that a reference could resolve to
	// either of two schemas (anchors.go). The library's error, if any, is
	// kept as the cause, for logs only.
	ErrInvalidSchema amp.ErrName = "invalid_schema"
	// ErrSchemaViolation (4004): a value does not match its schema. Details
	// is a []Violation.
	ErrSchemaViolation amp.ErrName = "schema_violation"
	// ErrNotJSONCompatible: a value is outside the JSON data model of this
	// package (byte string, tag, undefined, NaN, non-text map key, too deep,
	// a number out of range, a Go type that is not part of the model). 4004
	// when the value came from a peer (ValueFromCBOR, ValueFromJSON), code 0
	// when it is a Go value handed in by the program (Validate, ToCBOR).
	ErrNotJSONCompatible amp.ErrName = "not_json_compatible"
	// ErrInvalidJSON (code 0): ValueFromJSON input is not exactly one JSON
	// value, is not UTF-8, or is over MaxJSONSize.
	ErrInvalidJSON amp.ErrName = "invalid_json"
)

// maxPointerLen caps a JSON pointer shown in a message or a Violation. A
// longer pointer is cut after its last whole segment that fits, so it still
// names a real (enclosing) location.
const maxPointerLen = 512

// escapeToken escapes one reference token of a JSON pointer (RFC 6901).
func escapeToken(s string) string { return schemagraph.EscapeToken(s) }

// clipPointer returns p, or its longest prefix of whole segments within
// maxPointerLen bytes.
func clipPointer(p string) string {
	if len(p) <= maxPointerLen {
		return p
	}
	cut := strings.LastIndexByte(p[:maxPointerLen+1], '/')
	if cut <= 0 {
		return ""
	}
	return p[:cut]
}

// quotePointer renders a JSON pointer for a message: clipped, quoted, with
// control and invalid bytes escaped, "" shown as the root.
func quotePointer(p string) string {
	p = clipPointer(p)
	if p == "" {
		return "the root"
	}
	if !utf8.ValidString(p) {
		return strconv.QuoteToASCII(p)
	}
	return strconv.Quote(p)
}

// path is the location of the value being converted, kept as segments so
// that the pointer is only built when an error needs it.
type path []segment

type segment struct {
	key   string
	index int // -1 for a map key
}

func (p path) pointer() string {
	var b strings.Builder
	for _, s := range p {
		b.WriteByte('/')
		if s.index >= 0 {
			b.WriteString(strconv.Itoa(s.index))
		} else {
			b.WriteString(escapeToken(s.key))
		}
		if b.Len() > maxPointerLen {
			break
		}
	}
	return b.String()
}

// notCompatible returns a not_json_compatible error about the value at p.
func notCompatible(code amp.Code, p path, what string) *amp.Error {
	return notCompatibleAt(code, p.pointer(), what)
}

// notCompatibleAt is notCompatible at a JSON pointer.
func notCompatibleAt(code amp.Code, ptr string, what string) *amp.Error {
	return amp.Named(code, ErrNotJSONCompatible, "%s at %s is not part of the json data model", what, quotePointer(ptr))
}
