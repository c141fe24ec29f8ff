package keyfile

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/pem"
	"testing"
)

// TestFileShapeCheckedBeforePassphrase: a hostile key file handed to an
// operator holds an ENCRYPTED PRIVATE KEY block followed by something that
// makes the file invalid whatever the passphrase: a third key block, a
// block that is not a private key, or trailing data. The parser asked for
// the passphrase (a terminal prompt, a passphrase file read) and ran each
// block's key derivation, up to 10 million PBKDF2 iterations (up to 20
// million HMACs, seconds of CPU; CLI-46) per block, three blocks deep,
// before it noticed that the file could not be a key file. The file's
// shape is refused (invalid_key_file) before a passphrase is asked or
// anything derived (docs/SPEC-DECISIONS.md, CLI-29).
func TestFileShapeCheckedBeforePassphrase(t *testing.T) {
	_, ed, _ := ed25519.GenerateKey(rand.Reader)
	enc, err := EncryptedPEM([]byte("pw"), rand.Reader, ed)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := privatePEM(ed)
	if err != nil {
		t.Fatal(err)
	}
	cert := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{0x30, 0}})
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"third key block", append(append(append([]byte{}, enc...), enc...), enc...)},
		{"a block that is not a private key", append(append([]byte{}, enc...), cert...)},
		{"trailing data", append(append([]byte{}, enc...), "trailing"...)},
		{"encrypted der with trailing data", append(derOf(t, enc), 0)},
		{"two plain ed25519 blocks and an encrypted one", append(append(append([]byte{}, plain...), plain...), enc...)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			asked := 0
			_, err := ParsePrivateWith(tc.file, Options{Passphrase: func() ([]byte, error) {
				asked++
				return []byte("pw"), nil
			}})
			if errName(err) != ErrInvalidKeyFile {
				t.Errorf("got %v, want %s", err, ErrInvalidKeyFile)
			}
			if asked != 0 {
				t.Errorf("the passphrase was asked (and the key derived) for a file that cannot be a key file")
			}
		})
	}
}

// derOf returns the DER of the first PEM block of p.
func derOf(t *testing.T, p []byte) []byte {
	t.Helper()
	b, _ := pem.Decode(p)
	if b == nil {
		t.Fatal("no pem block")
	}
	return b.Bytes
}
