package amp

import (
	"bytes"
	"crypto/ed25519"
	"testing"
)

// TestEd25519KeyWhoseX25519FormIsTakenIsLeftUnchanged: X25519PublicFromEd25519
// reads the key little-endian, and big.Int big-endian, so the bytes are
// reversed and the sign bit of x dropped on the way in, and the result
// reversed on the way out (amp/crypto.go). The caller's key, often a
// slice of a DID document or a did:key still in use, is never the
// scratch space: its bytes are as they were, whatever the sign of x, and
// the form of a key is the same taken twice.
func TestEd25519KeyWhoseX25519FormIsTakenIsLeftUnchanged(t *testing.T) {
	for i := range 8 {
		pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(i + 1)}, 32)).Public().(ed25519.PublicKey)
		was := bytes.Clone(pub)
		first, err := X25519PublicFromEd25519(pub)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(pub, was) {
			t.Fatalf("key %d: %x became %x", i, was, pub)
		}
		again, err := X25519PublicFromEd25519(pub)
		if err != nil || again != first {
			t.Fatalf("key %d: taken twice %x, then %x (%v)", i, first, again, err)
		}
	}
}
