package amp

import (
	"bytes"
	"encoding/base64"
	"testing"

	"golang.org/x/crypto/curve25519"
)

// TestX25519KeyHasASecondSpellingInADIDDocument covers keyAgreement keys
// whose 32 bytes are not the canonical encoding of their u (RFC 7748 §5).
//
// Attack: a peer lists, in a DID document or as a did:key, an X25519 key
// spelled u + p (u < 19, so it still fits in 255 bits) or with the top bit
// set. X25519 masks the top bit and reduces u mod p, so the spelling names
// the same key as the canonical one: one key under two names, which defeats
// any comparison, cache or list of keys made on the bytes (AMP-14 refuses
// the same for Ed25519).
//
// Before: ParseDIDDocument and DIDKeyDocument accepted both spellings (only
// small-order keys were refused).
//
// Should: 3001 invalid_did_document, whichever way the key is written.
func TestX25519KeyHasASecondSpellingInADIDDocument(t *testing.T) {
	// u = 9 (the base point) spelled p + 9, and a real key with the top bit
	// set.
	uPlusP := fieldEdge[1]
	uPlusP[0] += 9
	own, err := NewAgreementKey([32]byte(bytes.Repeat([]byte{3}, 32)))
	if err != nil {
		t.Fatal(err)
	}
	topBit := own.Public
	topBit[31] |= 0x80
	canonicalOf := map[string][32]byte{"u+p": {9}, "top bit": own.Public}
	priv := bytes.Repeat([]byte{5}, 32)
	for name, spelled := range map[string][32]byte{"u+p": uPlusP, "top bit": topBit} {
		t.Run(name, func(t *testing.T) {
			canon := canonicalOf[name]
			// Sanity: X25519 takes both spellings as one key.
			a, errA := curve25519.X25519(priv, spelled[:])
			b, errB := curve25519.X25519(priv, canon[:])
			if errA != nil || errB != nil || !bytes.Equal(a, b) {
				t.Fatalf("the spelling is not a second name of its canonical key (%v, %v)", errA, errB)
			}
			if err := CheckX25519PublicKey(canon[:]); err != nil {
				t.Fatalf("the canonical spelling is refused: %v", err)
			}
			if err := CheckX25519PublicKey(spelled[:]); CodeOf(err) != CodeUnauthorized {
				t.Errorf("CheckX25519PublicKey: got %v, want 3001", err)
			}
			if _, err := DIDKeyDocument("did:key:" + EncodeMultikey(KeyX25519, spelled[:])); NameOf(err) != "invalid_did_document" {
				t.Errorf("DIDKeyDocument: got %v, want 3001 invalid_did_document", err)
			}
			for _, method := range []string{
				`"type":"X25519KeyAgreementKey2020","publicKeyMultibase":"` + EncodeMultikey(KeyX25519, spelled[:]) + `"`,
				`"type":"X25519KeyAgreementKey2019","publicKeyBase58":"` + base58Encode(spelled[:]) + `"`,
				`"type":"JsonWebKey2020","publicKeyJwk":{"kty":"OKP","crv":"X25519","x":"` + base64.RawURLEncoding.EncodeToString(spelled[:]) + `"}`,
			} {
				doc := `{"id":"did:web:x.example","verificationMethod":[{"id":"#x","controller":"did:web:x.example",` + method +
					`}],"keyAgreement":["#x"]}`
				if _, err := ParseDIDDocument([]byte(doc)); NameOf(err) != "invalid_did_document" {
					t.Errorf("ParseDIDDocument (%s): got %v, want 3001 invalid_did_document", method[:40], err)
				}
			}
		})
	}
}
