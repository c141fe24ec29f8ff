package keyfile

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// budgetLimits are the default limits scaled down so that a derivation
// at the bound takes milliseconds: 1,000 PBKDF2 iterations, 1 MiB of
// scrypt (8,192 blocks of 128 bytes).
func budgetLimits() kdfLimits {
	return kdfLimits{pbkdf2Iterations: 1000, scryptMemory: 1 << 20, scryptP: 16}
}

// twoKeys returns an Ed25519 and an X25519 private key, what one file may
// hold.
func twoKeys(t *testing.T) (ed25519.PrivateKey, *ecdh.PrivateKey) {
	t.Helper()
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	x, err := ecdh.X25519().GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return ed, x
}

// encryptedFile returns a PEM key file of the given keys, each encrypted
// under passphrase "pw" with its own scheme.
func encryptedFile(t *testing.T, schemes []encryptScheme, keys ...any) []byte {
	t.Helper()
	var out []byte
	for i, k := range keys {
		der, err := x509.MarshalPKCS8PrivateKey(k)
		if err != nil {
			t.Fatal(err)
		}
		enc, err := encryptPKCS8(der, []byte("pw"), rand.Reader, schemes[i])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: enc})...)
	}
	return out
}

// scryptScheme and pbkdf2Scheme are AES-256-CBC under scrypt or PBKDF2.
func scryptScheme(logN, r, p int) encryptScheme {
	return encryptScheme{scrypt: true, logN: logN, r: r, p: p, keyLen: 32}
}

func pbkdf2Scheme(iterations int) encryptScheme {
	return encryptScheme{iterations: iterations, keyLen: 32}
}

// sealedBlock returns an ENCRYPTED PRIVATE KEY block whose PBES2 names
// kdf and cipher (with its parameters), over 48 bytes that decrypt to
// nothing: what a hostile file needs to make a reader derive, made
// without deriving anything.
func sealedBlock(t *testing.T, algo asn1.ObjectIdentifier, kdf pkix.AlgorithmIdentifier, cipherOID asn1.ObjectIdentifier, cipherParams any) []byte {
	t.Helper()
	cp, err := asn1.Marshal(cipherParams)
	if err != nil {
		t.Fatal(err)
	}
	params, err := asn1.Marshal(pbes2Params{KeyDerivationFunc: kdf,
		EncryptionScheme: pkix.AlgorithmIdentifier{Algorithm: cipherOID, Parameters: asn1.RawValue{FullBytes: cp}}})
	if err != nil {
		t.Fatal(err)
	}
	der, err := asn1.Marshal(encryptedPrivateKeyInfo{
		Algo:          pkix.AlgorithmIdentifier{Algorithm: algo, Parameters: asn1.RawValue{FullBytes: params}},
		EncryptedData: make([]byte, 48),
	})
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: der})
}

func scryptKDF(t *testing.T, n, r, p int) pkix.AlgorithmIdentifier {
	t.Helper()
	b, err := asn1.Marshal(scryptParams{Salt: []byte("0123456789abcdef"), CostParameter: n, BlockSize: r, Parallelization: p})
	if err != nil {
		t.Fatal(err)
	}
	return pkix.AlgorithmIdentifier{Algorithm: oidScrypt, Parameters: asn1.RawValue{FullBytes: b}}
}

func pbkdf2KDF(t *testing.T, iterations int) pkix.AlgorithmIdentifier {
	t.Helper()
	b, err := asn1.Marshal(pbkdf2Params{Salt: []byte("0123456789abcdef"), IterationCount: iterations,
		PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}})
	if err != nil {
		t.Fatal(err)
	}
	return pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: asn1.RawValue{FullBytes: b}}
}

// sealedCBC is sealedBlock with PBES2 and AES-256-CBC.
func sealedCBC(t *testing.T, kdf pkix.AlgorithmIdentifier) []byte {
	return sealedBlock(t, oidPBES2, kdf, oidAES256CBC, make([]byte, 16))
}

// counted parses data with lim, counting the passphrase's asks and the
// derivations that started.
func counted(data []byte, lim kdfLimits) (keys *Keys, asked, derived int, err error) {
	lim.derived = func() { derived++ }
	keys, err = parsePrivate(data, Options{Passphrase: func() ([]byte, error) {
		asked++
		return []byte("pw"), nil
	}}, lim)
	return keys, asked, derived, err
}

// TestKeyFileWhoseKeysTogetherAskMoreThanOneKeyMayIsRefusedBeforeAnyDerivation:
// the KDF bounds (10,000,000 PBKDF2 iterations; 256 MiB of scrypt memory
// and work, CLI-26, CLI-46) were a key's, and a file holds two keys, each
// derived in turn: a file of two scrypt keys of N = 2^15, r = 63, p = 1
// (252 MiB each) asked 504 MiB, two PBKDF2 keys 20,000,000 iterations.
// The keys of one file now share one key's bound, each key's share of
// its KDF's bound adding up to at most the whole, checked before the
// passphrase is asked and before any derivation:
// unsupported_key_encryption, nothing derived (docs/SPEC-DECISIONS.md,
// CLI-65).
func TestKeyFileWhoseKeysTogetherAskMoreThanOneKeyMayIsRefusedBeforeAnyDerivation(t *testing.T) {
	ed, x := twoKeys(t)
	for _, tc := range []struct {
		name string
		file func(t *testing.T) []byte
		lim  kdfLimits
	}{
		{"two scrypt keys of just over half the memory each", func(t *testing.T) []byte {
			// r·(N + p + 2) = 4,099 blocks each: 8,198 of 8,192.
			return encryptedFile(t, []encryptScheme{scryptScheme(12, 1, 1), scryptScheme(12, 1, 1)}, ed, x)
		}, budgetLimits()},
		{"two scrypt keys of just over half the work each", func(t *testing.T) []byte {
			// N·r·p = 4,096 blocks each at p = 8 (r·(N + p + 2) =
			// 522): 8,192 of 8,190.
			return encryptedFile(t, []encryptScheme{scryptScheme(9, 1, 8), scryptScheme(9, 1, 8)}, ed, x)
		}, kdfLimits{pbkdf2Iterations: 1000, scryptMemory: 8190 * 128, scryptP: 16}},
		{"two pbkdf2 keys of 600 iterations of 1,000", func(t *testing.T) []byte {
			return encryptedFile(t, []encryptScheme{pbkdf2Scheme(600), pbkdf2Scheme(600)}, ed, x)
		}, budgetLimits()},
		{"pbkdf2 at 60% and scrypt at 50.04%", func(t *testing.T) []byte {
			return encryptedFile(t, []encryptScheme{pbkdf2Scheme(600), scryptScheme(12, 1, 1)}, ed, x)
		}, budgetLimits()},
		{"scrypt at the whole and one pbkdf2 iteration", func(t *testing.T) []byte {
			return encryptedFile(t, []encryptScheme{scryptScheme(8, 2, 16), pbkdf2Scheme(1)}, ed, x)
		}, budgetLimits()},
		{"default bounds: two scrypt keys of 252 MiB", func(t *testing.T) []byte {
			k := sealedCBC(t, scryptKDF(t, 1<<15, 63, 1))
			return append(append([]byte{}, k...), k...)
		}, defaultLimits()},
		{"default bounds: two pbkdf2 keys of 5,000,001 iterations", func(t *testing.T) []byte {
			k := sealedCBC(t, pbkdf2KDF(t, 5_000_001))
			return append(append([]byte{}, k...), k...)
		}, defaultLimits()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, asked, derived, err := counted(tc.file(t), tc.lim)
			if errName(err) != ErrUnsupportedEncryption {
				t.Errorf("got %v, want %s", err, ErrUnsupportedEncryption)
			}
			if asked != 0 || derived != 0 {
				t.Errorf("the passphrase was asked %d times and %d keys derived for a file whose keys together ask more than one key may", asked, derived)
			}
		})
	}
}

// TestKeyFileWhoseKeysShareOneKeysBoundIsRead: a file whose keys together
// stay within one key's bound reads as before, each key derived once and
// the passphrase asked once; one key alone may still ask the whole
// bound.
func TestKeyFileWhoseKeysShareOneKeysBoundIsRead(t *testing.T) {
	ed, x := twoKeys(t)
	for _, tc := range []struct {
		name    string
		schemes []encryptScheme
		keys    []any
	}{
		{"two scrypt keys of half the memory", []encryptScheme{scryptScheme(11, 1, 1), scryptScheme(11, 1, 1)}, []any{ed, x}},
		{"two pbkdf2 keys of 500 iterations: the whole", []encryptScheme{pbkdf2Scheme(500), pbkdf2Scheme(500)}, []any{ed, x}},
		{"pbkdf2 at 40% and scrypt at 50.04%", []encryptScheme{pbkdf2Scheme(400), scryptScheme(12, 1, 1)}, []any{ed, x}},
		{"one scrypt key of the whole work", []encryptScheme{scryptScheme(8, 2, 16)}, []any{ed}},
		{"one pbkdf2 key of the whole bound", []encryptScheme{pbkdf2Scheme(1000)}, []any{x}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, asked, derived, err := counted(encryptedFile(t, tc.schemes, tc.keys...), budgetLimits())
			if err != nil {
				t.Fatal(err)
			}
			if asked != 1 || derived != len(tc.keys) {
				t.Errorf("passphrase asked %d times, %d keys derived; want 1 and %d", asked, derived, len(tc.keys))
			}
			if got := btoi(k.Ed25519 != nil) + btoi(k.X25519 != nil); got != len(tc.keys) {
				t.Errorf("read %d keys, want %d", got, len(tc.keys))
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestKeyFileWhoseSecondKeyIsRefusedAnywayIsRefusedBeforeThePassphrase:
// the scheme and parameters of a key were checked only when it was
// decrypted, so a file whose second key is refused whatever the
// passphrase (PBES1, an unknown cipher, a KDF beyond one key's bound,
// damaged AES parameters) first had its passphrase asked (a prompt, a
// passphrase file read) and its first key derived, up to the whole
// bound; a DER key beyond the bound had its passphrase asked. Every
// key's encryption is now checked before the passphrase is asked and any
// key derived, with the error name the key gets alone
// (docs/SPEC-DECISIONS.md, CLI-66).
func TestKeyFileWhoseSecondKeyIsRefusedAnywayIsRefusedBeforeThePassphrase(t *testing.T) {
	ed, _ := twoKeys(t)
	first := encryptedFile(t, []encryptScheme{scryptScheme(8, 1, 1)}, ed)
	pbes1 := asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 3} // pbeWithMD5AndDES-CBC
	camellia := asn1.ObjectIdentifier{1, 2, 392, 200011, 61, 1, 1, 1, 4}
	for _, tc := range []struct {
		name   string
		second []byte
		want   amp.ErrName
	}{
		{"pbes1", sealedBlock(t, pbes1, scryptKDF(t, 256, 1, 1), oidAES256CBC, make([]byte, 16)), ErrUnsupportedEncryption},
		{"an unknown cipher", sealedBlock(t, oidPBES2, scryptKDF(t, 256, 1, 1), camellia, make([]byte, 16)), ErrUnsupportedEncryption},
		{"pbkdf2 beyond one key's bound", sealedCBC(t, pbkdf2KDF(t, 1001)), ErrUnsupportedEncryption},
		{"scrypt beyond one key's bound", sealedCBC(t, scryptKDF(t, 1<<13, 1, 1)), ErrUnsupportedEncryption},
		{"aes-gcm with an 8-byte nonce", sealedBlock(t, oidPBES2, scryptKDF(t, 256, 1, 1), oidAES256GCM, gcmParams{Nonce: make([]byte, 8), ICVLen: 16}), ErrUnsupportedEncryption},
		{"aes-cbc with an 8-byte iv", sealedBlock(t, oidPBES2, scryptKDF(t, 256, 1, 1), oidAES256CBC, make([]byte, 8)), ErrInvalidKeyFile},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, asked, derived, err := counted(append(append([]byte{}, first...), tc.second...), budgetLimits())
			if errName(err) != tc.want {
				t.Errorf("got %v, want %s", err, tc.want)
			}
			if asked != 0 || derived != 0 {
				t.Errorf("the passphrase was asked %d times and %d keys derived for a file refused whatever the passphrase", asked, derived)
			}
		})
	}
	t.Run("der key beyond one key's bound", func(t *testing.T) {
		_, asked, derived, err := counted(derOf(t, sealedCBC(t, pbkdf2KDF(t, 1001))), budgetLimits())
		if errName(err) != ErrUnsupportedEncryption || asked != 0 || derived != 0 {
			t.Errorf("got %v, passphrase asked %d times, %d keys derived; want %s, none", err, asked, derived, ErrUnsupportedEncryption)
		}
	})
}
