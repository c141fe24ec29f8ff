package keyfile

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"testing"
)

// FuzzParsePrivate: key files are read from disk, where anything may be.
// Threats: a crash, or a file accepted as a key that does not work (an
// Ed25519 key whose public half does not match its seed).
func FuzzParsePrivate(f *testing.F) {
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	x, _ := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{2}, 32))
	both, _ := privatePEM(ed, x)
	one, _ := privatePEM(ed)
	for _, s := range [][]byte{both, one, PublicPEM(ed.Public().(ed25519.PublicKey)), []byte("-----BEGIN PRIVATE KEY-----\n-----END PRIVATE KEY-----\n"), nil} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := ParsePrivate(data)
		if err != nil {
			return
		}
		if k.Ed25519 != nil {
			again := ed25519.NewKeyFromSeed(k.Ed25519.Seed())
			if !again.Equal(k.Ed25519) {
				t.Fatal("an ed25519 key whose public half does not match its seed was accepted")
			}
			if _, err := k.Identity(""); err != nil {
				t.Fatalf("an accepted key gives no identity: %v", err)
			}
		}
	})
}

// FuzzParsePublicPEM: public keys come from operators and publishers.
func FuzzParsePublicPEM(f *testing.F) {
	f.Add(PublicPEM(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)))
	f.Add([]byte("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		pub, err := ParsePublicPEM(data)
		if err == nil && len(pub) != ed25519.PublicKeySize {
			t.Fatalf("accepted a %d-byte key", len(pub))
		}
	})
}
