package amp

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha512"
	"math/big"
	"slices"
	"sync"

	"golang.org/x/crypto/curve25519"
	"golang.org/x/crypto/nacl/box"
)

// AgreementKey is an X25519 key pair used for authcrypt (RFC 001 §8.5).
type AgreementKey struct {
	Private [32]byte
	Public  [32]byte
}

// NewAgreementKey returns the key pair of a 32-byte X25519 private key.
func NewAgreementKey(private [32]byte) (*AgreementKey, error) {
	pub, err := curve25519.X25519(private[:], curve25519.Basepoint)
	if err != nil {
		return nil, Wrap(CodeInternalError, err, "invalid x25519 private key")
	}
	k := &AgreementKey{Private: private}
	copy(k.Public[:], pub)
	return k, nil
}

// AgreementKeyFromEd25519 derives the X25519 key pair of an Ed25519 key the
// way libsodium's crypto_sign_ed25519_sk_to_curve25519 does: the clamped
// first half of SHA-512(seed). Its public half equals
// X25519PublicFromEd25519(priv.Public()), which is what a did:key document
// lists as the keyAgreement key.
func AgreementKeyFromEd25519(priv ed25519.PrivateKey) (*AgreementKey, error) {
	if len(priv) != ed25519.PrivateKeySize {
		return nil, NewError(CodeInternalError, "invalid ed25519 private key")
	}
	h := sha512.Sum512(priv.Seed())
	var x [32]byte
	copy(x[:], h[:32])
	x[0] &= 248
	x[31] &= 127
	x[31] |= 64
	return NewAgreementKey(x)
}

// Field arithmetic for the Edwards-to-Montgomery map; used once per DID.
func curveP() *big.Int {
	p := new(big.Int).Lsh(big.NewInt(1), 255)
	return p.Sub(p, big.NewInt(19))
}

func curveD(p *big.Int) *big.Int {
	// d = -121665/121666 mod p
	num := new(big.Int).Neg(big.NewInt(121665))
	den := new(big.Int).ModInverse(big.NewInt(121666), p)
	return num.Mul(num, den).Mod(num, p)
}

// fieldEdge are p - 1, p and p + 1 (p = 2^255 - 19), little-endian: of
// small order in both lists below (-1 of order 2, and the non-canonical
// encodings of 0 and 1), as y for Ed25519 and as u for X25519.
var fieldEdge = [3][32]byte{
	{0xec, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	{0xed, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
	{0xee, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f},
}

// smallOrderY lists the encodings, with the sign bit of x cleared, of the
// Ed25519 points of small order: y = 0 (order 4), y = 1 (the identity),
// the two y of the points of order 8, y = p - 1 (order 2), and p and p + 1,
// the non-canonical encodings of 0 and 1. With either sign bit these are
// the 14 encodings of the 8 points of order dividing 8. The list is
// libsodium's (the blocklist of ge25519_has_small_order,
// src/libsodium/crypto_core/ed25519/ref10/ref10.c); Chalkias, Garillot and
// Nikolaenko, "Taming the many EdDSAs" (SSR 2020, eprint 2020/1244),
// section 3, explains why verifiers must refuse them.
var smallOrderY = [7][32]byte{
	{},
	{0x01},
	{0x26, 0xe8, 0x95, 0x8f, 0xc2, 0xb2, 0x27, 0xb0, 0x45, 0xc3, 0xf4, 0x89, 0xf2, 0xef, 0x98, 0xf0,
		0xd5, 0xdf, 0xac, 0x05, 0xd3, 0xc6, 0x33, 0x39, 0xb1, 0x38, 0x02, 0x88, 0x6d, 0x53, 0xfc, 0x05},
	{0xc7, 0x17, 0x6a, 0x70, 0x3d, 0x4d, 0xd8, 0x4f, 0xba, 0x3c, 0x0b, 0x76, 0x0d, 0x10, 0x67, 0x0f,
		0x2a, 0x20, 0x53, 0xfa, 0x2c, 0x39, 0xcc, 0xc6, 0x4e, 0xc7, 0xfd, 0x77, 0x92, 0xac, 0x03, 0x7a},
	fieldEdge[0], fieldEdge[1], fieldEdge[2],
}

// CheckEd25519PublicKey refuses, with 3001, an Ed25519 public key that
// names no key pair anyone can be held to (docs/SPEC-DECISIONS.md AMP-14):
//
//   - a length other than 32 bytes;
//   - a point of small order (smallOrderY, either sign of x): no private key
//     exists for it, and crypto/ed25519.Verify accepts one forged signature
//     (R = the identity, S = 0) for such a key on about half of all messages,
//     so anybody could sign as it;
//   - a non-canonical encoding (y >= p, RFC 8032 §5.1.3): a second name for
//     a key that has a canonical one.
//
// It costs a few byte comparisons; whether the point is on the curve is
// left to ed25519.Verify, which refuses a key that is not.
func CheckEd25519PublicKey(pub []byte) error {
	return checkCurveKey(pub, "ed25519", &smallOrderY, true)
}

// atLeastP reports whether the low 255 bits of a 32-byte little-endian
// field element encoding (the y of an Ed25519 point, whose top bit is the
// sign of x, or the u of an X25519 key, whose top bit X25519 ignores) are
// p = 2^255 - 19 or more: a second name for the element minus p.
func atLeastP(pub []byte) bool {
	if pub[31]&0x7f != 0x7f || pub[0] < 0xed {
		return false
	}
	for _, b := range pub[1:31] {
		if b != 0xff {
			return false
		}
	}
	return true
}

// smallOrderU lists the X25519 public keys (u coordinates, little-endian)
// of small order: u = 0 (order 4), u = 1 (order 1), the two u of the
// points of order 8, u = p - 1 (order 2), and p and p + 1, the
// non-canonical encodings of 0 and 1. With either top bit (which X25519
// ignores, RFC 7748 §5) these are every encoding whose X25519 output is
// the same for every private key. The list is libsodium's (the blocklist of
// has_small_order, src/libsodium/crypto_scalarmult/curve25519/ref10/
// x25519_ref10.c); Bernstein, "How do I validate Curve25519 public keys?"
// (https://cr.yp.to/ecdh.html#validate) names the same points.
var smallOrderU = [7][32]byte{
	{},
	{0x01},
	{0xe0, 0xeb, 0x7a, 0x7c, 0x3b, 0x41, 0xb8, 0xae, 0x16, 0x56, 0xe3, 0xfa, 0xf1, 0x9f, 0xc4, 0x6a,
		0xda, 0x09, 0x8d, 0xeb, 0x9c, 0x32, 0xb1, 0xfd, 0x86, 0x62, 0x05, 0x16, 0x5f, 0x49, 0xb8, 0x00},
	{0x5f, 0x9c, 0x95, 0xbc, 0xa3, 0x50, 0x8c, 0x24, 0xb1, 0xd0, 0xb1, 0x55, 0x9c, 0x83, 0xef, 0x5b,
		0x04, 0x44, 0x5c, 0xc4, 0x58, 0x1c, 0x8e, 0x86, 0xd8, 0x22, 0x4e, 0xdd, 0xd0, 0x9f, 0x11, 0x57},
	fieldEdge[0], fieldEdge[1], fieldEdge[2],
}

// CheckX25519PublicKey refuses, with 3001, an X25519 public key that
// names no key pair anyone can be held to, or is a second name for one
// (docs/SPEC-DECISIONS.md AMP-14):
//
//   - a length other than 32 bytes;
//   - a u of small order (smallOrderU, either top bit): the X25519 output,
//     and so the authcrypt key, is the same whatever the other side's
//     private key, so anyone could read what is sealed to it and seal
//     messages "from" it;
//   - a non-canonical encoding (RFC 7748 §5): the top bit set, which X25519
//     masks, or u >= p = 2^255 - 19 once it is masked, which X25519 reduces
//     mod p. Either names the same key as its canonical encoding, so two
//     DID documents, or a did:key and a document, could list one key under
//     two names.
func CheckX25519PublicKey(pub []byte) error {
	return checkCurveKey(pub, "x25519", &smallOrderU, false)
}

// checkCurveKey is the check of CheckEd25519PublicKey and
// CheckX25519PublicKey, whose keys are both 32-byte little-endian field
// elements of 2^255 - 19 with a spare top bit: 3001 for a key of another
// length, one on smallOrder (either top bit), or one not in canonical form
// (atLeastP; or the top bit set, unless topBitFree says that bit is free,
// the sign of x of an Ed25519 key). curve names the key in the message.
func checkCurveKey(pub []byte, curve string, smallOrder *[7][32]byte, topBitFree bool) error {
	if len(pub) != 32 {
		return NewError(CodeUnauthorized, "invalid %s public key", curve)
	}
	if onBlocklist(pub, smallOrder) {
		return NewError(CodeUnauthorized, "%s public key of small order", curve)
	}
	if !topBitFree && pub[31]&0x80 != 0 || atLeastP(pub) {
		return NewError(CodeUnauthorized, "%s public key not in canonical form", curve)
	}
	return nil
}

// onBlocklist reports whether the 32-byte key pub is one of list with
// either top bit (the sign of x for Ed25519, ignored by X25519).
func onBlocklist(pub []byte, list *[7][32]byte) bool {
	for _, b := range list {
		if bytes.Equal(pub[:31], b[:31]) && pub[31]&0x7f == b[31] {
			return true
		}
	}
	return false
}

// X25519PublicFromEd25519 maps an Ed25519 public key to its X25519 form,
// u = (1 + y) / (1 - y) mod p (RFC 7748 §4.1), after checking that the
// key passes CheckEd25519PublicKey (so its X25519 form is not of small
// order either) and names a point on the curve.
func X25519PublicFromEd25519(pub []byte) ([32]byte, error) {
	var out [32]byte
	if err := CheckEd25519PublicKey(pub); err != nil {
		return out, err
	}
	p := curveP()
	be := slices.Clone(pub) // pub is little-endian, big.Int big-endian
	slices.Reverse(be)
	be[0] &= 0x7f // drop the sign bit of x
	y := new(big.Int).SetBytes(be)
	one := big.NewInt(1)
	if y.Cmp(p) >= 0 || y.Cmp(one) == 0 {
		return out, NewError(CodeUnauthorized, "invalid ed25519 public key")
	}
	// On the curve: x^2 = (y^2 - 1) / (d y^2 + 1) must be a square.
	y2 := new(big.Int).Mul(y, y)
	y2.Mod(y2, p)
	num := new(big.Int).Sub(y2, one)
	num.Mod(num, p)
	den := new(big.Int).Mul(curveD(p), y2)
	den.Add(den, one).Mod(den, p)
	x2 := new(big.Int).Mul(num, new(big.Int).ModInverse(den, p))
	x2.Mod(x2, p)
	if x2.Sign() != 0 && big.Jacobi(x2, p) != 1 {
		return out, NewError(CodeUnauthorized, "invalid ed25519 public key")
	}
	u := new(big.Int).Add(one, y)
	inv := new(big.Int).Sub(one, y)
	inv.Mod(inv, p).ModInverse(inv, p)
	u.Mul(u, inv).Mod(u, p)
	u.FillBytes(out[:])
	slices.Reverse(out[:])
	return out, nil
}

// SharedKeys caches NaCl box shared keys per (own public key, peer public
// key) pair: precomputing costs one X25519 (~70 µs), using a cached key ~2 µs
// (docs/PERFORMANCE.md). It holds at most its capacity; when full, an arbitrary entry
// is dropped. The zero value is not usable; use NewSharedKeys. Safe for
// concurrent use.
type SharedKeys struct {
	keys boundedMap[[64]byte, *[32]byte]
}

// NewSharedKeys returns a cache of at most max entries (1024 when max <= 0).
func NewSharedKeys(max int) *SharedKeys {
	if max <= 0 {
		max = 1024
	}
	return &SharedKeys{keys: newBoundedMap[[64]byte, *[32]byte](max)}
}

// get returns the shared key of own and peer, computing it when needed. A
// nil cache computes every time. ok is false when peer is of small order.
func (c *SharedKeys) get(own *AgreementKey, peer *[32]byte) (key *[32]byte, ok bool) {
	if c == nil {
		return boxSharedKey(own, peer)
	}
	var id [64]byte
	copy(id[:32], own.Public[:])
	copy(id[32:], peer[:])
	if k, ok := c.keys.get(id); ok {
		return k, true
	}
	k, ok := boxSharedKey(own, peer)
	if ok {
		c.keys.put(id, k)
	}
	return k, ok
}

// boxSharedKey is box.Precompute, except that it refuses a peer key whose
// X25519 output is all zero, that is one of small order
// (docs/SPEC-DECISIONS.md AMP-14): box.Precompute uses
// curve25519.ScalarMult, which returns that output, the same for every
// private key, where curve25519.X25519 refuses it. The box key is HSalsa20
// of the X25519 output, so an all-zero output is exactly the box key
// zeroOutputBoxKey: one comparison, no second scalar multiplication.
func boxSharedKey(own *AgreementKey, peer *[32]byte) (*[32]byte, bool) {
	k := new([32]byte)
	box.Precompute(k, peer, &own.Private)
	if *k == zeroOutputBoxKey() {
		return nil, false
	}
	return k, true
}

// zeroOutputBoxKey is the box key of an all-zero X25519 output: the key
// box.Precompute derives from the point u = 0, whatever the private key.
var zeroOutputBoxKey = sync.OnceValue(func() [32]byte {
	var k, zero, priv [32]byte
	priv[0] = 1
	box.Precompute(&k, &zero, &priv)
	return k
})

// seal encrypts plaintext for peer with authcrypt (nacl box); ok is false
// when peer is of small order.
func (c *SharedKeys) seal(plaintext []byte, nonce *[24]byte, own *AgreementKey, peer *[32]byte) ([]byte, bool) {
	k, ok := c.get(own, peer)
	if !ok {
		return nil, false
	}
	return box.SealAfterPrecomputation(nil, plaintext, nonce, k), true
}

// open decrypts ciphertext from peer; ok is false on any failure, a peer
// key of small order included.
func (c *SharedKeys) open(ciphertext []byte, nonce *[24]byte, own *AgreementKey, peer *[32]byte) ([]byte, bool) {
	k, ok := c.get(own, peer)
	if !ok {
		return nil, false
	}
	return box.OpenAfterPrecomputation(nil, ciphertext, nonce, k)
}

// boundedMap is a map of at most max entries, safe for concurrent use:
// when it is full, an arbitrary entry makes room for a new one.
type boundedMap[K comparable, V any] struct {
	mu  sync.Mutex
	max int
	m   map[K]V
}

func newBoundedMap[K comparable, V any](max int) boundedMap[K, V] {
	return boundedMap[K, V]{max: max, m: make(map[K]V)}
}

// get returns the value of k, if any.
func (b *boundedMap[K, V]) get(k K) (V, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.m[k]
	return v, ok
}

// put sets the value of k, dropping an arbitrary entry when full.
func (b *boundedMap[K, V]) put(k K, v V) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.m) >= b.max {
		for old := range b.m {
			delete(b.m, old)
			break
		}
	}
	b.m[k] = v
}
