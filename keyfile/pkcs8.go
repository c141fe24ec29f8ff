package keyfile

import (
	"bytes"
	"crypto/aes"
	"crypto/cipher"
	"crypto/pbkdf2"
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"crypto/subtle"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"hash"
	"io"

	"golang.org/x/crypto/scrypt"
)

// Encrypted PKCS#8 (RFC 5958 §3, EncryptedPrivateKeyInfo) with PBES2
// (RFC 8018 §6.2): PBKDF2 (RFC 8018 §5.2) or scrypt (RFC 7914 §7) derives the
// key of AES-CBC (RFC 8018 B.2.5 with AES, RFC 3565) or AES-GCM (RFC 5084).
// These are what OpenSSL writes with `openssl pkcs8 -topk8 -v2 aes-256-cbc`
// (and `-scrypt`); PBES1 and the PKCS#12 schemes (DES, RC2, RC4) are
// refused by name.

var (
	oidPBES2  = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 13}
	oidPBKDF2 = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5, 12}
	oidScrypt = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 11591, 4, 11}

	oidHMACSHA1   = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 7}
	oidHMACSHA224 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 8}
	oidHMACSHA256 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 9}
	oidHMACSHA384 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 10}
	oidHMACSHA512 = asn1.ObjectIdentifier{1, 2, 840, 113549, 2, 11}

	oidAES128CBC = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 2}
	oidAES192CBC = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 22}
	oidAES256CBC = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 42}
	oidAES128GCM = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 6}
	oidAES192GCM = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 26}
	oidAES256GCM = asn1.ObjectIdentifier{2, 16, 840, 1, 101, 3, 4, 1, 46}

	// Refused by name: PBES1 (RFC 8018 §6.1) and PKCS#12 (RFC 7292 C).
	oidPBES1Prefix = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 5}
	oidPKCS12PBE   = asn1.ObjectIdentifier{1, 2, 840, 113549, 1, 12, 1}
)

// Bounds on what a key file may ask of the machine. A key file is chosen by
// the operator, but it is still a file: one that asks for a billion
// iterations or a gigabyte of scrypt memory is refused, not obeyed.
type kdfLimits struct {
	pbkdf2Iterations int   // each up to maxPBKDF2Blocks HMACs (pbkdf2Blocks)
	scryptMemory     int64 // 128·r·(N + p + 2) bytes, and 128·N·r·p bytes of work (scryptWithin)
	scryptP          int
}

// scryptWithin reports whether scrypt with cost n, block size r and
// parallelization p (each at least 1) stays within the memory bound, for
// everything scrypt.Key allocates (V: 128·r·N bytes, B: 128·r·p, XY:
// 256·r), and within as much work: the N·r·p block mixes of p derivations
// may touch no more than 128·N·r·p ≤ the same bound, so that p multiplies
// neither the memory nor the time of the largest derivation allowed
// (docs/SPEC-DECISIONS.md, CLI-26). The products are formed only once each
// factor is known to be small enough not to overflow.
func (lim kdfLimits) scryptWithin(n, r, p int64) bool {
	units := lim.scryptMemory / 128 // 128-byte blocks
	if r > units || n > units || p > units {
		return false
	}
	return n+p+2 <= units/r && n*r <= units/p
}

// defaultLimits bound the work a key file may ask for: 10 million PBKDF2
// iterations, 256 MiB of scrypt memory, scrypt p up to 16. A PBKDF2
// iteration is not one unit of work: it costs one HMAC for each block of
// the derived key (pbkdf2Blocks), two for HMAC-SHA-1 with an AES-192 or
// AES-256 key and for HMAC-SHA-224 with an AES-256 key, so a key may ask
// for up to 20 million HMACs (maxPBKDF2Blocks times the iterations), each
// two runs of the hash (docs/SPEC-DECISIONS.md, CLI-46; docs/FORMAT.md,
// key files).
func defaultLimits() kdfLimits {
	return kdfLimits{pbkdf2Iterations: 10_000_000, scryptMemory: 256 << 20, scryptP: 16}
}

const maxSaltLen = 1024

// maxPBKDF2Blocks is the most blocks PBKDF2 derives for a key here: an
// AES key (at most 32 bytes) from an HMAC of at least 20 bytes (SHA-1),
// so at most two (pbkdf2Blocks). The bound of a key's PBKDF2 work,
// documented in docs/FORMAT.md, is the iteration bound times this.
const maxPBKDF2Blocks = 2

// pbkdf2Blocks is how many HMACs one PBKDF2 iteration costs for a key of
// keyLen bytes with the hash h: one for each hLen-byte block of the key
// (RFC 8018 §5.2: T_1 … T_l, l = ⌈keyLen / hLen⌉, each its own chain of
// c iterations).
func pbkdf2Blocks(h func() hash.Hash, keyLen int) int {
	n := h().Size()
	return (keyLen + n - 1) / n
}

// prfHash returns the hash of a PBKDF2 PRF this package supports (HMAC
// with SHA-1 or a SHA-2), nil for another; no PRF is HMAC-SHA-1 (RFC 8018
// A.2).
func prfHash(prf asn1.ObjectIdentifier) func() hash.Hash {
	switch {
	case len(prf) == 0 || prf.Equal(oidHMACSHA1):
		return sha1.New
	case prf.Equal(oidHMACSHA224):
		return sha256.New224
	case prf.Equal(oidHMACSHA256):
		return sha256.New
	case prf.Equal(oidHMACSHA384):
		return sha512.New384
	case prf.Equal(oidHMACSHA512):
		return sha512.New
	}
	return nil
}

// The scheme WritePrivateEncrypted uses: scrypt with OpenSSL's own default
// parameters (N = 2^14, r = 8, p = 1: 16 MiB; OpenSSL refuses more than 32
// MiB by default) and AES-256-CBC, which OpenSSL 1.1 and later read.
const (
	writeScryptLogN = 14
	writeScryptR    = 8
	writeScryptP    = 1
)

type encryptedPrivateKeyInfo struct {
	Algo          pkix.AlgorithmIdentifier
	EncryptedData []byte
}

type pbes2Params struct {
	KeyDerivationFunc pkix.AlgorithmIdentifier
	EncryptionScheme  pkix.AlgorithmIdentifier
}

type pbkdf2Params struct {
	Salt           []byte
	IterationCount int
	KeyLength      int                      `asn1:"optional"`
	PRF            pkix.AlgorithmIdentifier `asn1:"optional"`
}

type scryptParams struct {
	Salt            []byte
	CostParameter   int
	BlockSize       int
	Parallelization int
	KeyLength       int `asn1:"optional"`
}

type gcmParams struct {
	Nonce  []byte
	ICVLen int `asn1:"optional,default:12"`
}

// unmarshalExact is asn1.Unmarshal that refuses trailing bytes.
func unmarshalExact(der []byte, v any) bool {
	rest, err := asn1.Unmarshal(der, v)
	return err == nil && len(rest) == 0
}

// decryptPKCS8 opens an EncryptedPrivateKeyInfo with passphrase and
// returns the PrivateKeyInfo DER inside. Errors: unsupported_key_encryption
// (a scheme this package does not implement, or parameters beyond its
// bounds), invalid_key_file (a structure that does not parse) and
// wrong_passphrase (decryption failed: a wrong passphrase or a damaged
// file, which cannot be told apart).
func decryptPKCS8(der []byte, passphrase []byte, lim kdfLimits) ([]byte, error) {
	var info encryptedPrivateKeyInfo
	if !unmarshalExact(der, &info) {
		return nil, fail(ErrInvalidKeyFile, "key file holds an unreadable encrypted pkcs#8 key")
	}
	alg := info.Algo.Algorithm
	switch {
	case alg.Equal(oidPBES2):
	case len(alg) > len(oidPBES1Prefix) && alg[:len(oidPBES1Prefix)].Equal(oidPBES1Prefix):
		return nil, fail(ErrUnsupportedEncryption, "private key is encrypted with pbes1 (des or rc2), which is not supported; re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`")
	case len(alg) > len(oidPKCS12PBE) && alg[:len(oidPKCS12PBE)].Equal(oidPKCS12PBE):
		return nil, fail(ErrUnsupportedEncryption, "private key is encrypted with a pkcs#12 scheme (3des, rc2 or rc4), which is not supported; re-encrypt it with `openssl pkcs8 -topk8 -v2 aes-256-cbc`")
	default:
		return nil, fail(ErrUnsupportedEncryption, "private key is encrypted with an unknown scheme; pbes2 is supported")
	}
	var p pbes2Params
	if !unmarshalExact(info.Algo.Parameters.FullBytes, &p) {
		return nil, fail(ErrInvalidKeyFile, "key file holds unreadable pbes2 parameters")
	}

	// The cipher first: it fixes the key length the KDF must produce.
	enc := p.EncryptionScheme.Algorithm
	var keyLen int
	gcm := false
	switch {
	case enc.Equal(oidAES128CBC):
		keyLen = 16
	case enc.Equal(oidAES192CBC):
		keyLen = 24
	case enc.Equal(oidAES256CBC):
		keyLen = 32
	case enc.Equal(oidAES128GCM):
		keyLen, gcm = 16, true
	case enc.Equal(oidAES192GCM):
		keyLen, gcm = 24, true
	case enc.Equal(oidAES256GCM):
		keyLen, gcm = 32, true
	default:
		return nil, fail(ErrUnsupportedEncryption, "private key is encrypted with a cipher other than aes-cbc or aes-gcm, which is not supported")
	}

	key, err := deriveKey(p.KeyDerivationFunc, passphrase, keyLen, lim)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fail(ErrInvalidKeyFile, "cannot use the derived key").WithCause(err)
	}
	var plain []byte
	if gcm {
		var gp gcmParams
		if !unmarshalExact(p.EncryptionScheme.Parameters.FullBytes, &gp) || len(gp.Nonce) != 12 || gp.ICVLen < 12 || gp.ICVLen > 16 {
			return nil, fail(ErrUnsupportedEncryption, "private key uses aes-gcm parameters other than a 12-byte nonce and a 12 to 16-byte tag")
		}
		aead, err := cipher.NewGCMWithTagSize(block, gp.ICVLen)
		if err != nil {
			return nil, fail(ErrUnsupportedEncryption, "private key uses unsupported aes-gcm parameters").WithCause(err)
		}
		plain, err = aead.Open(nil, gp.Nonce, info.EncryptedData, nil)
		if err != nil {
			return nil, fail(ErrWrongPassphrase, "cannot decrypt the private key: wrong passphrase, or the file is damaged")
		}
	} else {
		var iv []byte
		if !unmarshalExact(p.EncryptionScheme.Parameters.FullBytes, &iv) || len(iv) != aes.BlockSize {
			return nil, fail(ErrInvalidKeyFile, "key file holds an aes-cbc iv that is not 16 bytes")
		}
		ct := info.EncryptedData
		if len(ct) == 0 || len(ct)%aes.BlockSize != 0 {
			return nil, fail(ErrInvalidKeyFile, "key file holds encrypted data that is not a whole number of aes blocks")
		}
		plain = make([]byte, len(ct))
		cipher.NewCBCDecrypter(block, iv).CryptBlocks(plain, ct)
		var ok bool
		if plain, ok = unpad(plain); !ok {
			return nil, fail(ErrWrongPassphrase, "cannot decrypt the private key: wrong passphrase, or the file is damaged")
		}
		// AES-CBC has no integrity check: a wrong passphrase gives valid
		// padding about once in 256 tries. What it decrypted to must then
		// still be a private key, or it was the wrong passphrase too.
		if _, err := x509.ParsePKCS8PrivateKey(plain); err != nil {
			return nil, fail(ErrWrongPassphrase, "cannot decrypt the private key: wrong passphrase, or the file is damaged")
		}
	}
	return plain, nil
}

// deriveKey runs the PBES2 key derivation function kdf.
func deriveKey(kdf pkix.AlgorithmIdentifier, passphrase []byte, keyLen int, lim kdfLimits) ([]byte, error) {
	switch {
	case kdf.Algorithm.Equal(oidPBKDF2):
		var p pbkdf2Params
		if !unmarshalExact(kdf.Parameters.FullBytes, &p) {
			return nil, fail(ErrInvalidKeyFile, "key file holds unreadable pbkdf2 parameters")
		}
		if p.IterationCount < 1 || p.IterationCount > lim.pbkdf2Iterations || len(p.Salt) == 0 || len(p.Salt) > maxSaltLen {
			return nil, fail(ErrUnsupportedEncryption, "private key asks for pbkdf2 parameters beyond this tool's bounds (1 to %d iterations, a salt of 1 to %d bytes)", lim.pbkdf2Iterations, maxSaltLen)
		}
		if p.KeyLength != 0 && p.KeyLength != keyLen {
			return nil, fail(ErrInvalidKeyFile, "key file's pbkdf2 key length does not match its cipher")
		}
		h := prfHash(p.PRF.Algorithm)
		if h == nil {
			return nil, fail(ErrUnsupportedEncryption, "private key uses a pbkdf2 prf other than hmac with sha-1 or sha-2, which is not supported")
		}
		if pbkdf2Blocks(h, keyLen) > maxPBKDF2Blocks {
			// Not reached with the ciphers and PRFs above; a cipher or
			// PRF added later must not raise the documented work bound.
			return nil, fail(ErrUnsupportedEncryption, "private key asks for more pbkdf2 work than this tool's bound")
		}
		key, err := pbkdf2.Key(h, string(passphrase), p.Salt, p.IterationCount, keyLen)
		if err != nil {
			return nil, fail(ErrUnsupportedEncryption, "cannot derive the key with pbkdf2").WithCause(err)
		}
		return key, nil
	case kdf.Algorithm.Equal(oidScrypt):
		var p scryptParams
		if !unmarshalExact(kdf.Parameters.FullBytes, &p) {
			return nil, fail(ErrInvalidKeyFile, "key file holds unreadable scrypt parameters")
		}
		n, r := p.CostParameter, p.BlockSize
		if n < 2 || n&(n-1) != 0 || r < 1 || p.Parallelization < 1 || p.Parallelization > lim.scryptP ||
			!lim.scryptWithin(int64(n), int64(r), int64(p.Parallelization)) || len(p.Salt) == 0 || len(p.Salt) > maxSaltLen {
			return nil, fail(ErrUnsupportedEncryption, "private key asks for scrypt parameters beyond this tool's bounds (at most %d MiB of memory and as much work, p at most %d)", lim.scryptMemory>>20, lim.scryptP)
		}
		if p.KeyLength != 0 && p.KeyLength != keyLen {
			return nil, fail(ErrInvalidKeyFile, "key file's scrypt key length does not match its cipher")
		}
		key, err := scrypt.Key(passphrase, p.Salt, n, r, p.Parallelization, keyLen)
		if err != nil {
			return nil, fail(ErrUnsupportedEncryption, "cannot derive the key with scrypt").WithCause(err)
		}
		return key, nil
	default:
		return nil, fail(ErrUnsupportedEncryption, "private key uses a key derivation other than pbkdf2 or scrypt, which is not supported")
	}
}

// unpad removes PKCS#7 padding (RFC 8018 §6.1.1 step 4).
func unpad(b []byte) ([]byte, bool) {
	if len(b) == 0 {
		return nil, false
	}
	n := int(b[len(b)-1])
	if n == 0 || n > aes.BlockSize || n > len(b) {
		return nil, false
	}
	pad := bytes.Repeat([]byte{byte(n)}, n)
	if subtle.ConstantTimeCompare(b[len(b)-n:], pad) != 1 {
		return nil, false
	}
	return b[:len(b)-n], true
}

// encryptScheme names a PBES2 combination, for encryptPKCS8.
type encryptScheme struct {
	scrypt     bool // scrypt, or PBKDF2 with HMAC-SHA-256
	iterations int  // PBKDF2 only
	logN, r, p int  // scrypt only
	keyLen     int  // 16, 24 or 32
	gcm        bool // AES-GCM, or AES-CBC
}

// defaultScheme is what WritePrivateEncrypted writes.
func defaultScheme() encryptScheme {
	return encryptScheme{scrypt: true, logN: writeScryptLogN, r: writeScryptR, p: writeScryptP, keyLen: 32}
}

// encryptPKCS8 wraps a PrivateKeyInfo DER into an EncryptedPrivateKeyInfo.
func encryptPKCS8(plain, passphrase []byte, rand io.Reader, s encryptScheme) ([]byte, error) {
	salt := make([]byte, 16)
	if _, err := io.ReadFull(rand, salt); err != nil {
		return nil, fail(ErrKeyError, "cannot read randomness").WithCause(err)
	}
	var kdf pkix.AlgorithmIdentifier
	var key []byte
	var err error
	if s.scrypt {
		params, _ := asn1.Marshal(scryptParams{Salt: salt, CostParameter: 1 << s.logN, BlockSize: s.r, Parallelization: s.p})
		kdf = pkix.AlgorithmIdentifier{Algorithm: oidScrypt, Parameters: asn1.RawValue{FullBytes: params}}
		key, err = scrypt.Key(passphrase, salt, 1<<s.logN, s.r, s.p, s.keyLen)
	} else {
		params, _ := asn1.Marshal(pbkdf2Params{Salt: salt, IterationCount: s.iterations,
			PRF: pkix.AlgorithmIdentifier{Algorithm: oidHMACSHA256, Parameters: asn1.NullRawValue}})
		kdf = pkix.AlgorithmIdentifier{Algorithm: oidPBKDF2, Parameters: asn1.RawValue{FullBytes: params}}
		key, err = pbkdf2.Key(sha256.New, string(passphrase), salt, s.iterations, s.keyLen)
	}
	if err != nil {
		return nil, fail(ErrKeyError, "cannot derive the encryption key").WithCause(err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fail(ErrKeyError, "cannot encrypt the private key").WithCause(err)
	}
	var scheme pkix.AlgorithmIdentifier
	var ct []byte
	if s.gcm {
		nonce := make([]byte, 12)
		if _, err := io.ReadFull(rand, nonce); err != nil {
			return nil, fail(ErrKeyError, "cannot read randomness").WithCause(err)
		}
		aead, _ := cipher.NewGCM(block)
		ct = aead.Seal(nil, nonce, plain, nil)
		params, _ := asn1.Marshal(gcmParams{Nonce: nonce, ICVLen: 16})
		scheme = pkix.AlgorithmIdentifier{Algorithm: map[int]asn1.ObjectIdentifier{16: oidAES128GCM, 24: oidAES192GCM, 32: oidAES256GCM}[s.keyLen], Parameters: asn1.RawValue{FullBytes: params}}
	} else {
		iv := make([]byte, aes.BlockSize)
		if _, err := io.ReadFull(rand, iv); err != nil {
			return nil, fail(ErrKeyError, "cannot read randomness").WithCause(err)
		}
		n := aes.BlockSize - len(plain)%aes.BlockSize
		padded := append(append([]byte{}, plain...), bytes.Repeat([]byte{byte(n)}, n)...)
		ct = make([]byte, len(padded))
		cipher.NewCBCEncrypter(block, iv).CryptBlocks(ct, padded)
		params, _ := asn1.Marshal(iv)
		scheme = pkix.AlgorithmIdentifier{Algorithm: map[int]asn1.ObjectIdentifier{16: oidAES128CBC, 24: oidAES192CBC, 32: oidAES256CBC}[s.keyLen], Parameters: asn1.RawValue{FullBytes: params}}
	}
	params, err := asn1.Marshal(pbes2Params{KeyDerivationFunc: kdf, EncryptionScheme: scheme})
	if err != nil {
		return nil, fail(ErrKeyError, "cannot encode the encrypted key").WithCause(err)
	}
	der, err := asn1.Marshal(encryptedPrivateKeyInfo{
		Algo:          pkix.AlgorithmIdentifier{Algorithm: oidPBES2, Parameters: asn1.RawValue{FullBytes: params}},
		EncryptedData: ct,
	})
	if err != nil {
		return nil, fail(ErrKeyError, "cannot encode the encrypted key").WithCause(err)
	}
	return der, nil
}
