package keyfile

import (
	"bytes"
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"os"
	"path/filepath"
	"testing"
)

// pkcs8With returns the PrivateKeyInfo of key (Ed25519 or X25519) with
// extra bytes after its CurvePrivateKey, inside the privateKey OCTET
// STRING, and publicKey, when not nil, as a OneAsymmetricKey's (RFC 5958
// §2: version 2, [1] IMPLICIT BIT STRING).
func pkcs8With(t *testing.T, key any, inner []byte, publicKey []byte) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	var info privateKeyInfo
	if !unmarshalExact(der, &info) {
		t.Fatal("MarshalPKCS8PrivateKey wrote what privateKeyInfo does not read")
	}
	v := struct {
		Version    int
		Algo       pkix.AlgorithmIdentifier
		PrivateKey []byte
		PublicKey  asn1.RawValue `asn1:"optional"`
	}{Version: info.Version, Algo: info.Algo, PrivateKey: append(append([]byte{}, info.PrivateKey...), inner...)}
	if publicKey != nil {
		v.Version = 1
		v.PublicKey = asn1.RawValue{Class: asn1.ClassContextSpecific, Tag: 1, Bytes: append([]byte{0}, publicKey...)}
	}
	out, err := asn1.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPrivateKeyWithBytesAfterItIsRefused: crypto/x509 reads a PKCS#8
// key from the front of what it is given and passes over what follows,
// after the PrivateKeyInfo and after the CurvePrivateKey inside it. A
// key file of one key in DER with anything after it (up to the 64 KiB a
// key file may hold), a PEM block or an encrypted key (AES-GCM, so the
// file's own bytes) whose PrivateKeyInfo had bytes after it, read as the
// key at its front, where docs/FORMAT.md reads "one key in DER" and a
// PEM file's data after its blocks is refused. Expected: invalid_key_file
// for each; RFC 5958's OneAsymmetricKey (a publicKey after the private
// key, inside the structure) still reads (docs/SPEC-DECISIONS.md,
// CLI-84).
func TestPrivateKeyWithBytesAfterItIsRefused(t *testing.T) {
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{6}, 32))
	x, err := ecdh.X25519().NewPrivateKey(bytes.Repeat([]byte{7}, 32))
	if err != nil {
		t.Fatal(err)
	}
	edDER, err := x509.MarshalPKCS8PrivateKey(ed)
	if err != nil {
		t.Fatal(err)
	}
	gcm := encryptScheme{scrypt: true, logN: 4, r: 8, p: 1, keyLen: 32, gcm: true}
	sealed := func(plain []byte) []byte {
		enc, err := encryptPKCS8(plain, []byte("pw"), bytes.NewReader(make([]byte, 64)), gcm)
		if err != nil {
			t.Fatal(err)
		}
		return enc
	}
	block := func(typ string, der []byte) []byte { return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}) }
	after := append(append([]byte{}, edDER...), "an appended payload"...)
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		file []byte
	}{
		{"der with bytes after it", after},
		{"der with a second key after it", append(append([]byte{}, edDER...), edDER...)},
		{"pem block with bytes after the key", block("PRIVATE KEY", after)},
		{"ed25519 key with bytes after its seed", block("PRIVATE KEY", pkcs8With(t, ed, []byte{4, 0}, nil))},
		{"x25519 key with bytes after its scalar", block("PRIVATE KEY", pkcs8With(t, x, []byte{0}, nil))},
		{"encrypted pem whose key has bytes after it", block("ENCRYPTED PRIVATE KEY", sealed(after))},
		{"encrypted der whose key has bytes after it", sealed(after)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if keys, err := ParsePrivateWith(tc.file, fixedPassphrase("pw")); errName(err) != ErrInvalidKeyFile {
				t.Errorf("got keys %v, err %v; want %s", keys != nil, err, ErrInvalidKeyFile)
			}
			p := filepath.Join(dir, "key")
			if err := os.WriteFile(p, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			defer os.Remove(p)
			if _, err := ReadPrivateWith(p, fixedPassphrase("pw")); errName(err) != ErrInvalidKeyFile {
				t.Errorf("ReadPrivateWith: %v, want %s", err, ErrInvalidKeyFile)
			}
		})
	}

	// A OneAsymmetricKey, the publicKey inside the structure, still reads;
	// so does a key with nothing after it, plain or encrypted.
	for name, file := range map[string][]byte{
		"one asymmetric key":  block("PRIVATE KEY", pkcs8With(t, ed, nil, ed.Public().(ed25519.PublicKey))),
		"der":                 edDER,
		"encrypted pem (gcm)": block("ENCRYPTED PRIVATE KEY", sealed(edDER)),
	} {
		keys, err := ParsePrivateWith(file, fixedPassphrase("pw"))
		if err != nil || !keys.Ed25519.Equal(ed) {
			t.Errorf("%s: %v", name, err)
		}
	}
}
