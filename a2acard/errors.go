package a2acard

import "github.com/ampbundle/ampbundle/amp"

// The error names of Verify (and of New and Sign for ErrInvalid). Each
// error is an *amp.Error with no AMP code whose message never quotes the
// card.
const (
	// ErrTooLarge: the card is over MaxCardBytes, or holds more than
	// MaxSignatures signatures or MaxCardValues JSON values.
	ErrTooLarge amp.ErrName = "card_too_large"
	// ErrMalformed: not one I-JSON object (syntax, invalid UTF-8, a lone
	// surrogate, trailing data, a number outside the double range,
	// nesting deeper than jcs.MaxDepth).
	ErrMalformed amp.ErrName = "card_malformed"
	// ErrDuplicateMember: an object of the card names a member twice, or
	// spells a member of the Card struct it decodes into in another case
	// ("URL" beside or instead of "url"), which encoding/json would read as
	// that member (docs/SPEC-DECISIONS.md A2A-10), or with other
	// underscores ("supported_interfaces", "documentation_url"), which
	// protojson would (A2A-12), or with dashes ("documentation-url"), which
	// encoding/json/v2 matching names case-insensitively would (A2A-15);
	// the A2A 0.3 endpoint members (url, additionalInterfaces and its
	// entries' url) are read the same way (A2A-19).
	ErrDuplicateMember amp.ErrName = "card_duplicate_member"
	// ErrNumberNotCanonical: a number of the card is not written in its
	// RFC 8785 form (docs/SPEC-DECISIONS.md A2A-1).
	ErrNumberNotCanonical amp.ErrName = "card_number_not_canonical"
	// ErrUnsigned: no "signatures" member, or an empty array.
	ErrUnsigned amp.ErrName = "card_unsigned"
	// ErrSignatureMalformed: a signatures entry that is not an
	// AgentCardSignature (a missing or extra member, a wrong type, bad
	// base64url, a protected header that is not a JSON object or whose
	// jku or x5u is not an absolute https URL with a host and no
	// userinfo, A2A-20, A2A-21, an unprotected header repeating or adding
	// a protected parameter).
	ErrSignatureMalformed amp.ErrName = "card_signature_malformed"
	// ErrHeaderUnsupported: a protected header without typ "JOSE", or with
	// a parameter this package does not implement (crit, b64, ...).
	ErrHeaderUnsupported amp.ErrName = "card_header_unsupported"
	// ErrAlgUnsupported: the signature with the expected kid is not
	// EdDSA ("none", HS256, ES256, ...).
	ErrAlgUnsupported amp.ErrName = "card_alg_unsupported"
	// ErrKidMismatch: no signature's kid names the expected key, or the
	// kid is not a DID or DID URL, or a did:key that is not the key's own
	// (A2A-11).
	ErrKidMismatch amp.ErrName = "card_kid_mismatch"
	// ErrBadSignature: the signature with the expected kid does not verify
	// over the canonical card with that key.
	ErrBadSignature amp.ErrName = "card_bad_signature"
	// ErrInvalid: the signed card is not an A2A 1.0 AgentCard (a REQUIRED
	// member missing, empty or of the wrong type; a skill id, an extension
	// uri, or a capability id of our extension's params listed twice,
	// A2A-13; such a capability id that is not 1 to 512 bytes of
	// printable ASCII, A2A-22; an extension uri spelt like ExtensionURI
	// but not exactly it, A2A-23; a URL member that is not an absolute
	// http or https URL, A2A-14, also in securitySchemes, A2A-16); from
	// New and Sign, a card that cannot be written.
	ErrInvalid amp.ErrName = "card_invalid"
)

func fail(name amp.ErrName, format string, args ...any) *amp.Error {
	return amp.Named(0, name, format, args...)
}
