package a2acard

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestUnprotectedHeaderCannotNameAKey: anyone who relays a signed card can
// add, unsigned, a parameter that names the key to check its signature
// with, hoping the card still verifies.
//
// Attack: readSignature refused alg, kid, typ, jku, crit and b64 in a
// signature's unprotected "header" (A2A-2: they must be protected), and a
// protected jwk, x5u or x5c is card_header_unsupported; but an unprotected
// jwk (an attacker's public key), x5u (an attacker's URL), x5c, x5t or
// x5t#S256 was accepted: the signatures member is outside the payload, so
// a relay adds it without breaking the signature, and Verify reported the
// card valid. A consumer that re-checks the card's JWS with a general JOSE
// library (which takes an embedded jwk or x5c as the key, the
// CVE-2018-0114 pattern) or that shows the header reads the relay's key
// as the signer's.
//
// Should: card_signature_malformed for every key reference of RFC 7515
// §4.1.2-4.1.8 (jku, jwk, x5u, x5c, x5t, x5t#S256) in an unprotected
// header; a parameter that names no key still passes there.
func TestUnprotectedHeaderCannotNameAKey(t *testing.T) {
	card := signedVector(t)
	if _, err := Verify(card, vectorPub(), ""); err != nil {
		t.Fatalf("the genuine card: %v", err)
	}
	theirs := base64.RawURLEncoding.EncodeToString(otherKey().Public().(ed25519.PublicKey))
	unprotected := func(name string, value any) []byte {
		return edit(t, card, func(o jcs.Object) jcs.Object {
			s := get(o, "signatures").([]any)[0].(jcs.Object)
			return set(o, "signatures", []any{append(s, jcs.Member{Name: "header", Value: jcs.Object{{Name: name, Value: value}}})})
		})
	}
	for name, value := range map[string]any{
		"jwk":      jcs.Object{{Name: "kty", Value: "OKP"}, {Name: "crv", Value: "Ed25519"}, {Name: "x", Value: theirs}},
		"jku":      "https://attacker.example/jwks.json",
		"x5u":      "https://attacker.example/cert.pem",
		"x5c":      []any{"MIIBAAAA"},
		"x5t":      "3q2-7w",
		"x5t#S256": "3q2-7w",
	} {
		if _, err := Verify(unprotected(name, value), vectorPub(), ""); !errors.Is(err, ErrSignatureMalformed) {
			t.Errorf("unprotected %s: got %v, want %s", name, err, ErrSignatureMalformed)
		}
	}
	if _, err := Verify(unprotected("note", "relayed by example.org"), vectorPub(), ""); err != nil {
		t.Errorf("an unprotected parameter that names no key: %v", err)
	}
}
