package keyfile

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"os"
	"path/filepath"
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

// FuzzParseEncrypted: encrypted PKCS#8 in PEM or DER, with a passphrase.
// Threats: a crash in the ASN.1 or PBES2 code, a damaged file accepted as
// some other key, and a file that makes the derivation unbounded (here the
// bounds are small so that each run stays fast; a parameter beyond them
// must be refused, never obeyed).
func FuzzParseEncrypted(f *testing.F) {
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	for _, s := range []encryptScheme{
		{iterations: 10, keyLen: 32},
		{iterations: 10, keyLen: 16, gcm: true},
		{scrypt: true, logN: 4, r: 1, p: 1, keyLen: 32},
		{scrypt: true, logN: 4, r: 1, p: 1, keyLen: 24, gcm: true},
	} {
		pemData, err := encryptedPEM([]byte("fuzz"), rand.Reader, s, ed)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(pemData)
		block, _ := pem.Decode(pemData)
		f.Add(block.Bytes)
	}
	files, _ := filepath.Glob(filepath.Join("testdata", "openssl-*"))
	if len(files) == 0 {
		f.Fatal("no seed files in testdata")
	}
	for _, p := range files {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	lim := kdfLimits{pbkdf2Iterations: 4096, scryptMemory: 1 << 20, scryptP: 2}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := parsePrivate(data, Options{Passphrase: func() ([]byte, error) { return []byte("fuzz"), nil }}, lim)
		if err != nil {
			return
		}
		if k.Ed25519 != nil && !ed25519.NewKeyFromSeed(k.Ed25519.Seed()).Equal(k.Ed25519) {
			t.Fatal("an ed25519 key whose public half does not match its seed was accepted")
		}
	})
}

// FuzzParsePublicKey: public keys come from operators and publishers, as
// PEM or DER.
func FuzzParsePublicKey(f *testing.F) {
	pub := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)
	f.Add(PublicPEM(pub))
	block, _ := pem.Decode(PublicPEM(pub))
	f.Add(block.Bytes)
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ParsePublicKey(data)
		if err == nil && len(got) != ed25519.PublicKeySize {
			t.Fatalf("accepted a %d-byte key", len(got))
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
