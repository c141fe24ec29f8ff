package keyfile

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

func fixedPassphrase(p string) Options {
	return Options{Passphrase: func() ([]byte, error) { return []byte(p), nil }}
}

func errName(err error) amp.ErrName {
	var e *amp.Error
	if errors.As(err, &e) {
		return e.Name
	}
	return ""
}

// TestOpenSSLKeyFiles: key files written by another implementation
// (OpenSSL), plain and encrypted, PEM and DER, read to the right key or
// refused with the right name. An operator's existing keys must work, and
// an encrypted key must never be called "not a pkcs#8 key".
func TestOpenSSLKeyFiles(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var v struct {
		DID     string
		Private []struct {
			File, Passphrase, Expect string
		}
		Public []struct{ File, Expect string }
	}
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatal(err)
	}
	if len(v.Private) == 0 || len(v.Public) == 0 {
		t.Fatal("no vectors")
	}
	for _, tc := range v.Private {
		t.Run(tc.File+"/"+tc.Passphrase+"/"+tc.Expect, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", tc.File))
			if err != nil {
				t.Fatal(err)
			}
			o := Options{}
			asked := 0
			if tc.Passphrase != "" {
				o.Passphrase = func() ([]byte, error) { asked++; return []byte(tc.Passphrase), nil }
			}
			k, err := ParsePrivateWith(b, o)
			switch tc.Expect {
			case "ok":
				if err != nil {
					t.Fatal(err)
				}
				if got := amp.DIDKey(k.Ed25519.Public().(ed25519.PublicKey)); got != v.DID {
					t.Fatalf("did %s, want %s", got, v.DID)
				}
			case "x25519":
				if err != nil || k.X25519 == nil || k.Ed25519 != nil {
					t.Fatalf("keys %+v, err %v", k, err)
				}
			default:
				if got := errName(err); string(got) != tc.Expect {
					t.Fatalf("error %v (%s), want %s", err, got, tc.Expect)
				}
			}
			if asked > 1 {
				t.Errorf("the passphrase was asked %d times", asked)
			}
			if IsEncrypted(b) != (tc.Passphrase != "" || tc.Expect == "key_encrypted") {
				t.Errorf("IsEncrypted = %v", IsEncrypted(b))
			}
		})
	}
	for _, tc := range v.Public {
		t.Run("public/"+tc.File, func(t *testing.T) {
			pub, err := ParsePublic(filepath.Join("testdata", tc.File))
			if tc.Expect == "ok" {
				if err != nil || amp.DIDKey(pub) != v.DID {
					t.Fatalf("%v %v", pub, err)
				}
				return
			}
			if got := errName(err); string(got) != tc.Expect {
				t.Fatalf("error %v, want %s", err, tc.Expect)
			}
		})
	}
}

// TestEncryptedRoundTrip: every PBES2 combination this package reads, as
// written by it, opens with the passphrase and with nothing else. AES-GCM
// has no OpenSSL vector (OpenSSL does not write it), so this is its test.
func TestEncryptedRoundTrip(t *testing.T) {
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	tests := []struct {
		name string
		s    encryptScheme
	}{
		{"pbkdf2 aes-128-cbc", encryptScheme{iterations: 1000, keyLen: 16}},
		{"pbkdf2 aes-256-cbc", encryptScheme{iterations: 1000, keyLen: 32}},
		{"pbkdf2 aes-192-gcm", encryptScheme{iterations: 1000, keyLen: 24, gcm: true}},
		{"scrypt aes-256-gcm", encryptScheme{scrypt: true, logN: 10, r: 8, p: 1, keyLen: 32, gcm: true}},
		{"scrypt aes-128-cbc", encryptScheme{scrypt: true, logN: 10, r: 8, p: 1, keyLen: 16}},
		{"the default", defaultScheme()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			data, err := encryptedPEM([]byte("s3cret"), rand.Reader, tc.s, ed)
			if err != nil {
				t.Fatal(err)
			}
			k, err := ParsePrivateWith(data, fixedPassphrase("s3cret"))
			if err != nil || !k.Ed25519.Equal(ed) {
				t.Fatalf("round trip: %v", err)
			}
			if _, err := ParsePrivateWith(data, fixedPassphrase("s3cret ")); errName(err) != ErrWrongPassphrase {
				t.Fatalf("wrong passphrase: %v", err)
			}
			if _, err := ParsePrivate(data); errName(err) != ErrKeyEncrypted {
				t.Fatalf("no passphrase: %v", err)
			}
			// A flipped ciphertext byte is refused, never a different key.
			block, _ := pem.Decode(data)
			block.Bytes[len(block.Bytes)-3] ^= 1
			if k, err := ParsePrivateWith(pem.EncodeToMemory(block), fixedPassphrase("s3cret")); err == nil && !k.Ed25519.Equal(ed) {
				t.Fatal("a damaged file gave another key")
			} else if err == nil && tc.s.gcm {
				t.Fatal("aes-gcm accepted a damaged ciphertext")
			}
		})
	}
	if _, err := EncryptedPEM(nil, rand.Reader, ed); errName(err) != ErrKeyError {
		t.Fatalf("empty passphrase: %v", err)
	}
}

// TestEncryptedKeyCostBounded: a key file cannot make the reader spend
// unbounded CPU or memory deriving its key: parameters beyond the bounds
// are refused before any derivation.
func TestEncryptedKeyCostBounded(t *testing.T) {
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32))
	plain, _ := x509.MarshalPKCS8PrivateKey(ed)
	iv, _ := asn1.Marshal(make([]byte, 16))
	cbc := pkix.AlgorithmIdentifier{Algorithm: oidAES256CBC, Parameters: asn1.RawValue{FullBytes: iv}}
	build := func(kdf any, oid asn1.ObjectIdentifier) []byte {
		params, _ := asn1.Marshal(kdf)
		p2, _ := asn1.Marshal(pbes2Params{KeyDerivationFunc: pkix.AlgorithmIdentifier{Algorithm: oid, Parameters: asn1.RawValue{FullBytes: params}}, EncryptionScheme: cbc})
		der, _ := asn1.Marshal(encryptedPrivateKeyInfo{Algo: pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: asn1.RawValue{FullBytes: p2}}, EncryptedData: make([]byte, len(plain)+16-len(plain)%16)})
		return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
	}
	salt := []byte("0123456789abcdef")
	tests := []struct {
		name string
		file []byte
	}{
		{"a billion pbkdf2 iterations", build(pbkdf2Params{Salt: salt, IterationCount: 1 << 30}, oidPBKDF2)},
		{"zero pbkdf2 iterations", build(pbkdf2Params{Salt: salt, IterationCount: 0}, oidPBKDF2)},
		{"scrypt asking for 16 GiB", build(scryptParams{Salt: salt, CostParameter: 1 << 24, BlockSize: 8, Parallelization: 1}, oidScrypt)},
		{"scrypt N not a power of two", build(scryptParams{Salt: salt, CostParameter: 1000, BlockSize: 8, Parallelization: 1}, oidScrypt)},
		{"scrypt p of 1000", build(scryptParams{Salt: salt, CostParameter: 1024, BlockSize: 8, Parallelization: 1000}, oidScrypt)},
		{"a salt of 4 KiB", build(pbkdf2Params{Salt: make([]byte, 4096), IterationCount: 1}, oidPBKDF2)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParsePrivateWith(tc.file, fixedPassphrase("x"))
			if errName(err) != ErrUnsupportedEncryption {
				t.Fatalf("got %v, want %s", err, ErrUnsupportedEncryption)
			}
		})
	}
}

// TestOpenSSLReadsOurEncryptedKeys: what WritePrivateEncrypted writes is
// standard: OpenSSL opens it with the passphrase (skipped without openssl).
func TestOpenSSLReadsOurEncryptedKeys(t *testing.T) {
	openssl, err := exec.LookPath("openssl")
	if err != nil {
		t.Skip("no openssl")
	}
	ed := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32))
	path := filepath.Join(t.TempDir(), "k.pem")
	if err := WritePrivateEncrypted(path, []byte("correct horse"), rand.Reader, ed); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(openssl, "pkey", "-in", path, "-passin", "pass:correct horse", "-pubout", "-outform", "DER").Output()
	if err != nil {
		t.Fatalf("openssl cannot read our key: %v", err)
	}
	pub, err := ParsePublicKey(out)
	if err != nil || !pub.Equal(ed.Public()) {
		t.Fatalf("openssl derived another public key: %v", err)
	}
	if err := exec.Command(openssl, "pkey", "-in", path, "-passin", "pass:wrong", "-noout").Run(); err == nil {
		t.Fatal("openssl opened our key with a wrong passphrase")
	}
}

// TestWrongPassphraseWithValidCBCPadding: AES-CBC carries no integrity
// check, so some wrong passphrases decrypt to valid padding. Such a
// passphrase must still be called wrong_passphrase, never a damaged or
// foreign key file (a flaky name would send an operator the wrong way).
func TestWrongPassphraseWithValidCBCPadding(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	s := encryptScheme{iterations: 1, keyLen: 16}
	pemData, err := encryptedPEM([]byte("right"), rand.Reader, s, priv)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(pemData)
	found := 0
	for i := 0; i < 20000 && found < 3; i++ {
		wrong := []byte("wrong-" + strconv.Itoa(i))
		if !cbcPaddingValid(t, block.Bytes, wrong) {
			continue // invalid padding: the ordinary case
		}
		found++
		_, err := ParsePrivateWith(pemData, fixedPassphrase(string(wrong)))
		if errName(err) != ErrWrongPassphrase {
			t.Fatalf("passphrase %q decrypts to valid padding and is reported as %v, want %s", wrong, err, ErrWrongPassphrase)
		}
	}
	if found == 0 {
		t.Fatal("no wrong passphrase with valid padding found: the test checked nothing")
	}
}

// cbcPaddingValid decrypts an AES-CBC EncryptedPrivateKeyInfo with pass
// and reports whether its PKCS#7 padding is valid.
func cbcPaddingValid(t *testing.T, der, pass []byte) bool {
	t.Helper()
	var info encryptedPrivateKeyInfo
	var p pbes2Params
	var iv []byte
	if !unmarshalExact(der, &info) || !unmarshalExact(info.Algo.Parameters.FullBytes, &p) ||
		!unmarshalExact(p.EncryptionScheme.Parameters.FullBytes, &iv) {
		t.Fatal("cannot parse the encrypted key")
	}
	key, err := deriveKey(p.KeyDerivationFunc, pass, 16, defaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	b, err := aes.NewCipher(key)
	if err != nil {
		t.Fatal(err)
	}
	plain := make([]byte, len(info.EncryptedData))
	cipher.NewCBCDecrypter(b, iv).CryptBlocks(plain, info.EncryptedData)
	_, ok := unpad(plain)
	return ok
}

// TestWrongPassphraseThatPassesPadding: with AES-CBC a wrong passphrase
// yields valid padding about once in 256 tries; the garbage it decrypts to
// must still be reported as a wrong passphrase, not as a different error
// that sends the operator looking at the file's format.
func TestWrongPassphraseThatPassesPadding(t *testing.T) {
	enc, err := encryptPKCS8([]byte("not a PrivateKeyInfo at all"), []byte("p"), rand.Reader, encryptScheme{iterations: 10, keyLen: 32})
	if err != nil {
		t.Fatal(err)
	}
	data := pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc})
	if _, err := ParsePrivateWith(data, fixedPassphrase("p")); errName(err) != ErrWrongPassphrase {
		t.Fatalf("got %v, want %s", err, ErrWrongPassphrase)
	}
}
