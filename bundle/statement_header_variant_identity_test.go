package bundle

import (
	"crypto/ed25519"
	"testing"

	"github.com/fxamacker/cbor/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// TestSamePayloadUnderOtherProtectedHeadersIsRefusedNotMerged (review
// 16; a pinned property).
//
// Threat: a statement's identity is the SHA-256 of its payload alone
// (PayloadSHA256, TRUST-19), but a COSE_Sign signature covers the
// Sig_structure, which also holds the body's and the signature's
// protected headers. Were other protected headers accepted (another
// content type, an alg, crit, a header this parser ignores), two files of
// one payload, both validly signed, could be different statements to a
// COSE verifier and one statement to this store, and an attacker holding
// a throwaway key could have the variant a downstream store refuses (an
// alg it lacks, a crit it must not ignore) kept and relayed.
//
// Verified: decodeCOSE admits exactly one body header per content type
// and exactly one signature header per kid, so every variant below,
// validly signed, is refused before any identity is taken; the only
// freedom left is the list of signatures (kids and signature bytes),
// which VerifyStatement requires to verify. Keep it so.
func TestSamePayloadUnderOtherProtectedHeadersIsRefusedNotMerged(t *testing.T) {
	k := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	stranger := ed25519.NewKeyFromSeed(append(make([]byte, ed25519.SeedSize-1), 7))
	r := &Revocation{Format: RevocationFormat, Scope: "org.example", CreatedAt: "2026-11-20T11:00:00Z",
		Keys: []string{amp.DIDKey(stranger.Public().(ed25519.PublicKey))}}
	r.Normalize()
	genuine, err := SignRevocation(r, []ed25519.PrivateKey{k})
	if err != nil {
		t.Fatal(err)
	}
	_, obj, err := ParseRevocation(genuine)
	if err != nil {
		t.Fatal(err)
	}
	payload, kid := obj.Payload, KeyID(k.Public().(ed25519.PublicKey))
	enc := func(v any) []byte {
		b, err := amp.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	// signed is a COSE_Sign of payload under body header body, with one
	// signature by k under sign header sign, both covered as RFC 9052
	// §4.4 says.
	signed := func(body, sign []byte) []byte {
		sig := ed25519.Sign(k, sigStructure(body, sign, payload))
		return enc(cbor.Tag{Number: coseSignTag, Content: []any{body, map[int]any{}, payload, []any{[]any{sign, map[int]any{}, sig}}}})
	}
	if got := signed(bodyProtectedHeader(MediaTypeRevocation), signProtectedHeader(kid)); string(got) != string(genuine) {
		t.Fatal("test setup: the builder does not reproduce the writer's file")
	}
	for _, tc := range []struct {
		name       string
		body, sign []byte
	}{
		{"body header with alg", enc(map[int]any{coseHeaderCType: MediaTypeRevocation, coseHeaderAlg: coseAlgEdDSA}), signProtectedHeader(kid)},
		{"body header with crit", enc(map[int]any{2: []int{99}, coseHeaderCType: MediaTypeRevocation, 99: 1}), signProtectedHeader(kid)},
		{"body header with a numeric content type", enc(map[int]any{coseHeaderCType: 60}), signProtectedHeader(kid)},
		{"body header of another type", bodyProtectedHeader(MediaTypeRotation), signProtectedHeader(kid)},
		{"sign header with crit", bodyProtectedHeader(MediaTypeRevocation), enc(map[int]any{coseHeaderAlg: coseAlgEdDSA, 2: []int{99}, coseHeaderKID: kid, 99: 1})},
		{"sign header with an ignored label", bodyProtectedHeader(MediaTypeRevocation), enc(map[int]any{coseHeaderAlg: coseAlgEdDSA, coseHeaderKID: kid, 77: "x"})},
		{"sign header with another alg", bodyProtectedHeader(MediaTypeRevocation), enc(map[int]any{coseHeaderAlg: -7, coseHeaderKID: kid})},
		{"sign header without alg", bodyProtectedHeader(MediaTypeRevocation), enc(map[int]any{coseHeaderKID: kid})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := signed(tc.body, tc.sign)
			if _, _, err := ParseRevocation(v); err == nil {
				t.Fatalf("a file of the same payload under another protected header, validly signed, parses as the revocation: "+
					"one identity (%x) for files a COSE verifier tells apart", obj.PayloadSHA256())
			}
			if _, err := DecodeObject(v, MediaTypeRevocation); err == nil {
				t.Fatal("DecodeObject accepts the variant")
			}
		})
	}
}
