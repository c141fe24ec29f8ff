package amp

import (
	"bytes"
	"encoding/base64"
	"strings"
	"testing"
)

// respell returns s (unpadded base64url whose last character carries
// unused bits) with the lowest of those bits set: a second spelling that
// base64.RawURLEncoding decodes to the same bytes.
func respell(t *testing.T, s string) string {
	t.Helper()
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	if len(s)%4 == 0 {
		t.Fatalf("%q has no unused bits", s)
	}
	out := s[:len(s)-1] + string(alphabet[strings.IndexByte(alphabet, s[len(s)-1])|1])
	a, errA := base64.RawURLEncoding.DecodeString(s)
	b, errB := base64.RawURLEncoding.DecodeString(out)
	if errA != nil || errB != nil || !bytes.Equal(a, b) {
		t.Fatalf("%q and %q must decode to the same bytes (%v, %v)", s, out, errA, errB)
	}
	return out
}

// TestBase64URLValueHasASecondSpelling covers DecodeBase64URLStrict, the
// one decoder of peer-supplied base64url that names a key or is compared.
//
// Attack: a peer writes a value another way that base64.RawURLEncoding
// decodes to the same bytes (non-zero trailing bits, or a CR or LF, which
// even its Strict mode skips), so one key or cursor has several names.
//
// Should: only the canonical spelling decodes.
func TestBase64URLValueHasASecondSpelling(t *testing.T) {
	// 0xfb 0xff spells "-_" in base64url and "+/" in base64.
	key := bytes.Repeat([]byte{0xfb, 0xff, 0xa5}, 11)[:32]
	good := base64.RawURLEncoding.EncodeToString(key)
	if got, ok := DecodeBase64URLStrict(good); !ok || !bytes.Equal(got, key) {
		t.Fatalf("the canonical spelling: got %x, %v", got, ok)
	}
	if got, ok := DecodeBase64URLStrict(""); !ok || len(got) != 0 {
		t.Fatalf("the empty string: got %x, %v", got, ok)
	}
	for name, s := range map[string]string{
		"trailing bits":     respell(t, good),
		"line feed":         good[:8] + "\n" + good[8:],
		"carriage return":   good[:8] + "\r" + good[8:],
		"padding":           base64.URLEncoding.EncodeToString(key),
		"standard alphabet": base64.RawStdEncoding.EncodeToString(key),
		"impossible length": good[:41],
		"space":             good[:8] + " " + good[8:],
	} {
		t.Run(name, func(t *testing.T) {
			if got, ok := DecodeBase64URLStrict(s); ok {
				t.Fatalf("%q decoded to %x", s, got)
			}
		})
	}
}

// TestJWKKeyHasASecondBase64urlSpelling covers the x of a JWK method in a
// DID document.
//
// Attack: a peer's DID document writes a key's JWK x with non-zero
// trailing bits: base64.RawURLEncoding decoded it to the same 32 bytes, so
// one key had several spellings in documents and their caches.
//
// Before: ParseDIDDocument accepted it.
//
// Should: 3001 invalid_did_document.
func TestJWKKeyHasASecondBase64urlSpelling(t *testing.T) {
	own, err := NewAgreementKey([32]byte(bytes.Repeat([]byte{3}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	x := base64.RawURLEncoding.EncodeToString(own.Public[:])
	doc := func(x string) []byte {
		return []byte(`{"id":"did:web:x.example","verificationMethod":[{"id":"#x","controller":"did:web:x.example",` +
			`"type":"JsonWebKey2020","publicKeyJwk":{"kty":"OKP","crv":"X25519","x":"` + x + `"}}],"keyAgreement":["#x"]}`)
	}
	if _, err := ParseDIDDocument(doc(x)); err != nil {
		t.Fatalf("the canonical spelling is refused: %v", err)
	}
	if _, err := ParseDIDDocument(doc(respell(t, x))); NameOf(err) != "invalid_did_document" {
		t.Fatalf("a second spelling of one key: got %v, want 3001 invalid_did_document", err)
	}
}
