package a2acard

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// Payload returns the bytes a signature of c covers: the RFC 8785 form of
// c without its signatures and without members holding their default value
// (A2A §8.4.1).
func Payload(c *Card) ([]byte, error) {
	unsigned := *c
	unsigned.Signatures = nil
	raw, err := json.Marshal(&unsigned)
	if err != nil {
		return nil, fail(ErrInvalid, "the card cannot be written as JSON").WithCause(err)
	}
	tree, err := jcs.Parse(raw, jcs.MaxDepth)
	if err != nil {
		return nil, parseError(err)
	}
	obj, ok := tree.(jcs.Object)
	if !ok {
		return nil, fail(ErrInvalid, "the card is not a JSON object")
	}
	return payloadOf(obj)
}

// payloadOf is the canonical payload of a parsed card.
func payloadOf(card jcs.Object) ([]byte, error) {
	out, err := jcs.Marshal(stripDefaults(card.Without("signatures"), cardShape))
	if err != nil {
		return nil, parseError(err)
	}
	return out, nil
}

// ProtectedHeader returns the protected header Sign writes for kid, in its
// RFC 8785 form: {"alg":"EdDSA","kid":kid,"typ":"JOSE"}.
func ProtectedHeader(kid string) ([]byte, error) {
	return jcs.Marshal(jcs.Object{{Name: "alg", Value: Alg}, {Name: "kid", Value: kid}, {Name: "typ", Value: Typ}})
}

// Sign appends to c's signatures one made with key under the key id kid
// (DIDKeyID for a did:key agent; a kid that is not a DID or DID URL, or a
// did:key kid naming another key, is card_kid_mismatch) and returns the signed card as JSON. c
// is changed only when signing succeeds.
func Sign(c *Card, key ed25519.PrivateKey, kid string) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fail(ErrInvalid, "the signing key is not an ed25519 private key")
	}
	if kid == "" {
		return nil, fail(ErrInvalid, "the signature needs a kid")
	}
	if err := checkKid(key.Public().(ed25519.PublicKey), kid); err != nil {
		return nil, err
	}
	payload, err := Payload(c)
	if err != nil {
		return nil, err
	}
	header, err := ProtectedHeader(kid)
	if err != nil {
		return nil, fail(ErrInvalid, "the kid cannot be written as JSON").WithCause(err)
	}
	protected := base64.RawURLEncoding.EncodeToString(header)
	sig := ed25519.Sign(key, signingInput(protected, payload))
	signed := *c
	signed.Signatures = append(append([]Signature(nil), c.Signatures...), Signature{Protected: protected, Signature: base64.RawURLEncoding.EncodeToString(sig)})
	out, err := json.Marshal(&signed)
	if err != nil {
		return nil, fail(ErrInvalid, "the card cannot be written as JSON").WithCause(err)
	}
	// What is written must verify: never hand out a card that does not.
	if _, err := Verify(out, key.Public().(ed25519.PublicKey), kid); err != nil {
		return nil, err
	}
	c.Signatures = signed.Signatures
	return out, nil
}

// signingInput is the JWS Signing Input of RFC 7515 §5.1 for a detached
// payload: BASE64URL(protected header) "." BASE64URL(payload).
func signingInput(protected string, payload []byte) []byte {
	in := make([]byte, 0, len(protected)+1+base64.RawURLEncoding.EncodedLen(len(payload)))
	in = append(in, protected...)
	in = append(in, '.')
	return base64.RawURLEncoding.AppendEncode(in, payload)
}

// parseError names a jcs error as this package does.
func parseError(err error) error {
	switch {
	case errors.Is(err, jcs.ErrDuplicateMember):
		return fail(ErrDuplicateMember, "an object of the card names a member twice")
	case errors.Is(err, jcs.ErrNumber):
		return fail(ErrMalformed, "a number of the card has no IEEE 754 double value")
	case errors.Is(err, jcs.ErrTooMany):
		return fail(ErrTooLarge, "the card holds more than %d JSON values", MaxCardValues)
	case errors.Is(err, jcs.ErrTooDeep):
		return fail(ErrMalformed, "the card is nested deeper than %d", jcs.MaxDepth)
	default:
		return fail(ErrMalformed, "the card is not one I-JSON value")
	}
}
