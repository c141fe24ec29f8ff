package amp

import "encoding/base64"

// DecodeBase64URLStrict decodes s as unpadded base64url (RFC 4648 §5) in
// its one canonical spelling, and reports false for anything else: a
// character outside the alphabet, padding, a length no encoding has, or
// non-zero trailing bits (base64.RawURLEncoding alone accepts them, so up
// to 16 strings decode to the same bytes), and CR or LF (which even the
// Strict decoder skips). Every peer-supplied base64url value that names a
// key or is compared goes through it, so one value has one spelling.
func DecodeBase64URLStrict(s string) ([]byte, bool) {
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	// A skipped CR or LF leaves s longer than the encoding of what it
	// decodes to.
	if err != nil || base64.RawURLEncoding.EncodedLen(len(b)) != len(s) {
		return nil, false
	}
	return b, true
}
