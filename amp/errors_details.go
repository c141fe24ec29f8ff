package amp

import (
	"bytes"

	"github.com/fxamacker/cbor/v2"
)

// MaxErrorDetails bounds the details an answer this module signs
// carries for an error (ErrorBodyOf, capability.NewErrorResult): at most
// this many bytes of deterministic CBOR. Details over it are dropped
// whole, never cut (docs/SPEC-DECISIONS.md TRANSPORT-24). The module's
// own details fit within it (a schema violation's: at most 16 pointers
// of 512 bytes with their keywords, some 9 KiB), but for an ambiguous
// legacy type's list of candidates, which grows with the capabilities an
// agent serves and is dropped past it (its message still says why).
const MaxErrorDetails = 16 << 10

// MaxErrorDetailsDepth bounds how deep the arrays, maps and tags of the
// details an answer this module signs may nest (Limits.MaxDepth's
// count): deeper details are dropped whole. The module's own nest at
// most three deep (a map holding a list of maps).
const MaxErrorDetailsDepth = 8

// errorDetailsLimits is what SafeDetails checks details against.
func errorDetailsLimits() Limits {
	return Limits{MaxMessageSize: MaxErrorDetails, MaxDepth: MaxErrorDetailsDepth}
}

// SafeDetails returns the details of err that an answer this module
// signs may carry: the deterministic CBOR encoding of its Details when
// it is one well-formed item (Canonical's rules) of at most
// MaxErrorDetails bytes nested at most MaxErrorDetailsDepth deep; nil
// when there are none, when they cannot be encoded, or when they are
// over either bound (dropped whole: a cut CBOR item is no item). An
// *Error built from a peer's answer (ErrorBody.AsError,
// capability.ResultError.AsError) holds the peer's details as sent, raw
// CBOR bounded only by the peer's message limits: an agent whose handler
// hands that error on signs this instead (ErrorBodyOf,
// capability.NewErrorResult), so it never re-signs more than
// MaxErrorDetails bytes of a peer's choosing, and every later agent that
// hands it on signs the same bytes (docs/SPEC-DECISIONS.md
// TRANSPORT-24). Raw CBOR (cbor.RawMessage) is checked before anything
// is decoded or re-encoded: details over the size bound cost nothing.
func SafeDetails(err error) cbor.RawMessage {
	if err == nil {
		return nil
	}
	e := AsError(err)
	if e.Details == nil {
		return nil
	}
	var d []byte
	switch v := e.Details.(type) {
	case cbor.RawMessage:
		d = v
	default:
		enc, err := Marshal(e.Details)
		if err != nil {
			return nil
		}
		d = enc
	}
	out, cerr := errorDetailsLimits().Canonical(d)
	if cerr != nil {
		return nil
	}
	// Canonical returns its input when it is already deterministic: a
	// copy, so that the answer never shares the peer's buffer.
	return bytes.Clone(out)
}
