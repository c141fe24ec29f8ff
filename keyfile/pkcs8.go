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
// iterations or a gigabyte of scrypt memory is refused, not obeyed. The
// bounds are one key's, and what the keys of one file may ask together
// (fileWithin; docs/SPEC-DECISIONS.md, CLI-65).
type kdfLimits struct {
	pbkdf2Iterations int   // each up to maxPBKDF2Blocks HMACs (pbkdf2Blocks)
	scryptMemory     int64 // 128·r·(N + p + 2) bytes, and 128·N·r·p bytes of work (scryptWithin)
	scryptP          int
	derived          func() // when not nil, called as each derivation starts (tests count them)
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

// sealedKey is an EncryptedPrivateKeyInfo whose scheme and parameters
// were all checked (openSealed): what deriving its key costs is known,
// and nothing was derived yet.
type sealedKey struct {
	data   []byte // the encrypted PrivateKeyInfo
	kdf    kdfRun
	keyLen int
	gcm    *gcmParams // nil for AES-CBC
	iv     []byte     // AES-CBC's
}

// kdfRun is a PBES2 key derivation whose parameters are within the
// bounds of one key (checkKDF).
type kdfRun struct {
	salt       []byte
	prf        func() hash.Hash // PBKDF2's; nil for scrypt
	iterations int              // PBKDF2
	n, r, p    int              // scrypt
}

// openSealed parses an EncryptedPrivateKeyInfo and checks everything its
// decryption will use, its key derivation's bounds included, without
// deriving anything. Errors: unsupported_key_encryption (a scheme this
// package does not implement, or parameters beyond its bounds) and
// invalid_key_file (a structure that does not parse).
func openSealed(der []byte, lim kdfLimits) (*sealedKey, error) {
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
	s := &sealedKey{data: info.EncryptedData}
	gcm := false
	enc := p.EncryptionScheme.Algorithm
	switch {
	case enc.Equal(oidAES128CBC):
		s.keyLen = 16
	case enc.Equal(oidAES192CBC):
		s.keyLen = 24
	case enc.Equal(oidAES256CBC):
		s.keyLen = 32
	case enc.Equal(oidAES128GCM):
		s.keyLen, gcm = 16, true
	case enc.Equal(oidAES192GCM):
		s.keyLen, gcm = 24, true
	case enc.Equal(oidAES256GCM):
		s.keyLen, gcm = 32, true
	default:
		return nil, fail(ErrUnsupportedEncryption, "private key is encrypted with a cipher other than aes-cbc or aes-gcm, which is not supported")
	}
	run, err := checkKDF(p.KeyDerivationFunc, s.keyLen, lim)
	if err != nil {
		return nil, err
	}
	s.kdf = run
	if gcm {
		var gp gcmParams
		if !unmarshalExact(p.EncryptionScheme.Parameters.FullBytes, &gp) || len(gp.Nonce) != 12 || gp.ICVLen < 12 || gp.ICVLen > 16 {
			return nil, fail(ErrUnsupportedEncryption, "private key uses aes-gcm parameters other than a 12-byte nonce and a 12 to 16-byte tag")
		}
		s.gcm = &gp
		return s, nil
	}
	if !unmarshalExact(p.EncryptionScheme.Parameters.FullBytes, &s.iv) || len(s.iv) != aes.BlockSize {
		return nil, fail(ErrInvalidKeyFile, "key file holds an aes-cbc iv that is not 16 bytes")
	}
	if len(s.data) == 0 || len(s.data)%aes.BlockSize != 0 {
		return nil, fail(ErrInvalidKeyFile, "key file holds encrypted data that is not a whole number of aes blocks")
	}
	return s, nil
}

// decrypt derives s's key from passphrase and returns the PrivateKeyInfo
// DER inside. A failed decryption is wrong_passphrase: a wrong
// passphrase or a damaged file, which cannot be told apart.
func (s *sealedKey) decrypt(passphrase []byte, lim kdfLimits) ([]byte, error) {
	key, err := s.kdf.derive(passphrase, s.keyLen, lim)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fail(ErrInvalidKeyFile, "cannot use the derived key").WithCause(err)
	}
	if s.gcm != nil {
		aead, err := cipher.NewGCMWithTagSize(block, s.gcm.ICVLen)
		if err != nil {
			return nil, fail(ErrUnsupportedEncryption, "private key uses unsupported aes-gcm parameters").WithCause(err)
		}
		plain, err := aead.Open(nil, s.gcm.Nonce, s.data, nil)
		if err != nil {
			return nil, fail(ErrWrongPassphrase, "cannot decrypt the private key: wrong passphrase, or the file is damaged")
		}
		return plain, nil
	}
	plain := make([]byte, len(s.data))
	cipher.NewCBCDecrypter(block, s.iv).CryptBlocks(plain, s.data)
	plain, ok := unpad(plain)
	if !ok {
		return nil, fail(ErrWrongPassphrase, "cannot decrypt the private key: wrong passphrase, or the file is damaged")
	}
	// AES-CBC has no integrity check: a wrong passphrase gives valid
	// padding about once in 256 tries. What it decrypted to must then
	// still be a private key, or it was the wrong passphrase too.
	if _, err := x509.ParsePKCS8PrivateKey(plain); err != nil {
		return nil, fail(ErrWrongPassphrase, "cannot decrypt the private key: wrong passphrase, or the file is damaged")
	}
	return plain, nil
}

// openSealedFile opens every encrypted key of one file (openSealed) and
// refuses them, unsupported_key_encryption, when together they ask for
// more derivation than the file's budget (fileWithin): all before a
// passphrase is asked or any key derived (docs/SPEC-DECISIONS.md,
// CLI-65, CLI-66).
func openSealedFile(ders [][]byte, lim kdfLimits) ([]*sealedKey, error) {
	keys := make([]*sealedKey, 0, len(ders))
	for _, der := range ders {
		s, err := openSealed(der, lim)
		if err != nil {
			return nil, err
		}
		keys = append(keys, s)
	}
	if !lim.fileWithin(keys) {
		return nil, fail(ErrUnsupportedEncryption, "the private keys of this file together ask for more key derivation than this tool's bound for one file (what one key may: %d pbkdf2 iterations, or %d MiB of scrypt memory and as much work, shared by the file's keys)", lim.pbkdf2Iterations, lim.scryptMemory>>20)
	}
	return keys, nil
}

// cost is what the derivation asks of its bound: PBKDF2 iterations, or
// scrypt's 128-byte blocks, the larger of what it allocates, r·(N + p +
// 2), and its work, N·r·p (scryptWithin). Both are within one key's
// bound (checkKDF).
func (k kdfRun) cost() (iterations, blocks int64) {
	if k.prf != nil {
		return int64(k.iterations), 0
	}
	n, r, p := int64(k.n), int64(k.r), int64(k.p)
	return 0, max(r*(n+p+2), n*r*p)
}

// fileWithin reports whether the key derivations of one file's keys
// together ask no more than one key may: each key's share of its KDF's
// bound (its PBKDF2 iterations out of pbkdf2Iterations; its scrypt cost
// out of scryptMemory's blocks) adding up to at most the whole. Each
// share is at most the whole (checkKDF) and a file holds at most
// maxKeysPerFile keys, so the sum, in units of 1/(iterations·blocks),
// cannot overflow.
func (lim kdfLimits) fileWithin(keys []*sealedKey) bool {
	iters, units := int64(lim.pbkdf2Iterations), lim.scryptMemory/128
	var sum int64
	for _, k := range keys {
		it, blocks := k.kdf.cost()
		sum += it*units + blocks*iters
	}
	return sum <= iters*units
}

// deriveKey runs the PBES2 key derivation function kdf, once its
// parameters are checked (checkKDF).
func deriveKey(kdf pkix.AlgorithmIdentifier, passphrase []byte, keyLen int, lim kdfLimits) ([]byte, error) {
	run, err := checkKDF(kdf, keyLen, lim)
	if err != nil {
		return nil, err
	}
	return run.derive(passphrase, keyLen, lim)
}

// checkKDF parses the PBES2 key derivation function kdf of a key of
// keyLen bytes and checks its parameters against one key's bounds.
func checkKDF(kdf pkix.AlgorithmIdentifier, keyLen int, lim kdfLimits) (kdfRun, error) {
	switch {
	case kdf.Algorithm.Equal(oidPBKDF2):
		var p pbkdf2Params
		if !unmarshalExact(kdf.Parameters.FullBytes, &p) {
			return kdfRun{}, fail(ErrInvalidKeyFile, "key file holds unreadable pbkdf2 parameters")
		}
		if p.IterationCount < 1 || p.IterationCount > lim.pbkdf2Iterations || len(p.Salt) == 0 || len(p.Salt) > maxSaltLen {
			return kdfRun{}, fail(ErrUnsupportedEncryption, "private key asks for pbkdf2 parameters beyond this tool's bounds (1 to %d iterations, a salt of 1 to %d bytes)", lim.pbkdf2Iterations, maxSaltLen)
		}
		if p.KeyLength != 0 && p.KeyLength != keyLen {
			return kdfRun{}, fail(ErrInvalidKeyFile, "key file's pbkdf2 key length does not match its cipher")
		}
		h := prfHash(p.PRF.Algorithm)
		if h == nil {
			return kdfRun{}, fail(ErrUnsupportedEncryption, "private key uses a pbkdf2 prf other than hmac with sha-1 or sha-2, which is not supported")
		}
		if pbkdf2Blocks(h, keyLen) > maxPBKDF2Blocks {
			// Not reached with the ciphers and PRFs above; a cipher or
			// PRF added later must not raise the documented work bound.
			return kdfRun{}, fail(ErrUnsupportedEncryption, "private key asks for more pbkdf2 work than this tool's bound")
		}
		return kdfRun{salt: p.Salt, prf: h, iterations: p.IterationCount}, nil
	case kdf.Algorithm.Equal(oidScrypt):
		var p scryptParams
		if !unmarshalExact(kdf.Parameters.FullBytes, &p) {
			return kdfRun{}, fail(ErrInvalidKeyFile, "key file holds unreadable scrypt parameters")
		}
		n, r := p.CostParameter, p.BlockSize
		if n < 2 || n&(n-1) != 0 || r < 1 || p.Parallelization < 1 || p.Parallelization > lim.scryptP ||
			!lim.scryptWithin(int64(n), int64(r), int64(p.Parallelization)) || len(p.Salt) == 0 || len(p.Salt) > maxSaltLen {
			return kdfRun{}, fail(ErrUnsupportedEncryption, "private key asks for scrypt parameters beyond this tool's bounds (at most %d MiB of memory and as much work, p at most %d)", lim.scryptMemory>>20, lim.scryptP)
		}
		if p.KeyLength != 0 && p.KeyLength != keyLen {
			return kdfRun{}, fail(ErrInvalidKeyFile, "key file's scrypt key length does not match its cipher")
		}
		return kdfRun{salt: p.Salt, n: n, r: r, p: p.Parallelization}, nil
	default:
		return kdfRun{}, fail(ErrUnsupportedEncryption, "private key uses a key derivation other than pbkdf2 or scrypt, which is not supported")
	}
}

// derive runs the checked derivation k for a key of keyLen bytes.
func (k kdfRun) derive(passphrase []byte, keyLen int, lim kdfLimits) ([]byte, error) {
	if lim.derived != nil {
		lim.derived()
	}
	if k.prf != nil {
		key, err := pbkdf2.Key(k.prf, string(passphrase), k.salt, k.iterations, keyLen)
		if err != nil {
			return nil, fail(ErrUnsupportedEncryption, "cannot derive the key with pbkdf2").WithCause(err)
		}
		return key, nil
	}
	key, err := scrypt.Key(passphrase, k.salt, k.n, k.r, k.p, keyLen)
	if err != nil {
		return nil, fail(ErrUnsupportedEncryption, "cannot derive the key with scrypt").WithCause(err)
	}
	return key, nil
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
