package bundle

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// Attack: a bundle.Policy that trusts an Ed25519 key of small order (here
// the identity point, 01 00 .. 00, for which no private key exists). Such
// a policy is built by any caller of the package from its own key list:
// trust.State.Policy leaves these keys out (TRUST-21), but bundle itself
// checks a trusted key's signature against the key as given
// (checkSignature), so its guarantee rests on every caller. The forged
// signature R = the identity, S = 0 verifies for every message under the
// identity key: anyone signs statements and bundles "as" it.
// Today: Verify (and the strict verify of a bundle's reader) counts the
// forged signature as the trusted key's.
// Should: a trusted key that fails amp.CheckEd25519PublicKey verifies
// nothing (counted as no signer, or refused as bad_signature/untrusted_key),
// whoever built the policy.
func TestSmallOrderKeyInPolicyVerifiesForgedSignature(t *testing.T) {
	identity := make(ed25519.PublicKey, ed25519.PublicKeySize)
	identity[0] = 0x01
	forged := make([]byte, ed25519.SignatureSize)
	forged[0] = 0x01 // R = the identity point, S = 0

	kid := KeyID(identity)
	o := &signedObject{bodyProtected: bodyProtectedHeader(MediaTypeRevocation), payload: []byte("any payload the forger likes")}
	o.signatures = []Signature{{KID: string(kid), Protected: signProtectedHeader(kid), Sig: forged}}
	item, err := o.encode()
	if err != nil {
		t.Fatal(err)
	}
	if !ed25519.Verify(identity, sigStructure(o.bodyProtected, o.signatures[0].Protected, o.payload), forged) {
		t.Skip("crypto/ed25519 refuses the forged signature itself")
	}
	obj, err := DecodeObject(item, MediaTypeRevocation)
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	p := &Policy{Keys: []TrustedKey{{Name: "legacy", Key: identity, Scopes: []string{"*"}}}}
	if ks, err := obj.Verify(p); err == nil {
		for _, k := range ks {
			if bytes.Equal(k.Key, identity) {
				t.Errorf("Verify counted a forged signature by the small-order key %q as trusted", k.Name)
			}
		}
	}
	if ks, err := obj.obj.verify(p); err == nil && len(ks) > 0 {
		t.Errorf("strict verify counted a forged signature by the small-order key %q as trusted", ks[0].Name)
	}
}
