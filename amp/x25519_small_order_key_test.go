package amp

import (
	"bytes"
	"encoding/hex"
	"testing"

	"golang.org/x/crypto/curve25519"
)

// smallOrderX25519Keys lists canonical X25519 public keys of small order
// (libsodium's blocklist in crypto_scalarmult/curve25519/ref10/x25519_ref10.c):
// u = 0 (order 4), u = 1 (order 1), and a point of order 8. With any
// clamped scalar their product is the point at infinity, so the X25519
// output, and the NaCl box key derived from it, is the same for everyone.
func smallOrderX25519Keys(t *testing.T) map[string][32]byte {
	t.Helper()
	out := map[string][32]byte{}
	for name, h := range map[string]string{
		"u=0":     "0000000000000000000000000000000000000000000000000000000000000000",
		"u=1":     "0100000000000000000000000000000000000000000000000000000000000000",
		"order 8": "e0eb7a7c3b41b8ae1656e3faf19fc46ada098deb9c32b1fd866205165f49b800",
	} {
		b, err := hex.DecodeString(h)
		if err != nil {
			t.Fatal(err)
		}
		// Sanity: X25519 (which refuses an all-zero output) must call it
		// low order.
		if _, err := curve25519.X25519(bytes.Repeat([]byte{7}, 32), b); err == nil {
			t.Fatalf("%s is not of small order", name)
		}
		out[name] = [32]byte(b)
		b[31] |= 0x80
		out[name+" with the top bit set"] = [32]byte(b)
	}
	return out
}

// TestSmallOrderX25519KeyYieldsAKeyEveryoneShares covers the
// X25519 path that AMP-14 leaves open: it refuses small-order Ed25519 keys
// "so a small-order key never yields a public authcrypt key either", but an
// X25519 key given directly is never checked.
//
// Attack: a DID names a keyAgreement key of small order, as a did:key
// (z6LS..., multicodec x25519-pub) or as an X25519KeyAgreementKey2020 /
// Multikey / JWK method of a DID document. A sender encrypting to it, or a
// receiver decrypting from it, derives the NaCl box key from an X25519
// output that is all zero whatever its own private key (box.Precompute
// uses curve25519.ScalarMult, which does not refuse low-order points): the
// body is readable by anyone on the path, and an authcrypt ciphertext
// "from" that key can be made by anyone.
//
// Before (review 52): DIDKeyDocument and ParseDIDDocument accepted such
// keys, and Encrypt sealed to one; a third party with an unrelated key
// opened the ciphertext.
//
// Should: refused like a small-order Ed25519 key, with 3001
// invalid_did_document at DIDKeyDocument / ParseDIDDocument, and Encrypt
// (and decrypt) refuse a peer key of small order (curve25519.X25519
// refuses an all-zero shared secret). The top bit of u, which X25519
// ignores, does not hide one.
func TestSmallOrderX25519KeyYieldsAKeyEveryoneShares(t *testing.T) {
	for name, low := range smallOrderX25519Keys(t) {
		t.Run(name, func(t *testing.T) {
			did := "did:key:" + EncodeMultikey(KeyX25519, low[:])
			if _, err := DIDKeyDocument(did); err == nil {
				t.Errorf("DIDKeyDocument accepted a did:key whose x25519 key is of small order")
			}
			doc := `{"id":"did:web:x.example","verificationMethod":[{"id":"#x","type":"X25519KeyAgreementKey2020",` +
				`"controller":"did:web:x.example","publicKeyMultibase":"` + EncodeMultikey(KeyX25519, low[:]) + `"}],"keyAgreement":["#x"]}`
			if _, err := ParseDIDDocument([]byte(doc)); err == nil {
				t.Errorf("ParseDIDDocument accepted a keyAgreement key of small order")
			}

			alice, err := NewAgreementKey([32]byte(bytes.Repeat([]byte{1}, 32)))
			if err != nil {
				t.Fatal(err)
			}
			mallory, err := NewAgreementKey([32]byte(bytes.Repeat([]byte{9}, 32)))
			if err != nil {
				t.Fatal(err)
			}
			secret := []byte("a body for the holder of the key")
			m := &Message{Body: secret, Sig: make([]byte, SigSize)}
			var nonce [NonceSize]byte
			peer := low
			if err := Encrypt(m, alice, &peer, &nonce, nil); err != nil {
				if CodeOf(err) != CodeUnauthorized {
					t.Errorf("Encrypt refused a small-order key with %v, want 3001", err)
				}
				// Decrypting from it is refused as well.
				if _, ok := (*SharedKeys)(nil).open([]byte("any ciphertext of some length"), &nonce, mallory, &peer); ok {
					t.Errorf("open accepted a ciphertext from a small-order key")
				}
				return
			}
			pt, ok := (*SharedKeys)(nil).open(m.Enc.Ciphertext, &nonce, mallory, &peer)
			if ok && bytes.Equal(pt, secret) {
				t.Errorf("Encrypt sealed to a small-order key, and a third party with an unrelated key opened it")
			} else {
				t.Errorf("Encrypt sealed to a small-order key")
			}
		})
	}
}
