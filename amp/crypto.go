package amp

import (
	"crypto/ed25519"
	"crypto/sha512"
	"math/big"
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

// X25519PublicFromEd25519 maps an Ed25519 public key to its X25519 form,
// u = (1 + y) / (1 - y) mod p (RFC 7748 §4.1), after checking that the
// encoding is canonical and names a point on the curve.
func X25519PublicFromEd25519(pub []byte) ([32]byte, error) {
	var out [32]byte
	if len(pub) != ed25519.PublicKeySize {
		return out, NewError(CodeUnauthorized, "invalid ed25519 public key")
	}
	p := curveP()
	le := make([]byte, 32)
	for i := range le {
		le[i] = pub[31-i]
	}
	le[0] &= 0x7f // drop the sign bit of x
	y := new(big.Int).SetBytes(le)
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
	ub := u.FillBytes(make([]byte, 32))
	for i := range out {
		out[i] = ub[31-i]
	}
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
// nil cache computes every time.
func (c *SharedKeys) get(own *AgreementKey, peer *[32]byte) *[32]byte {
	if c == nil {
		var k [32]byte
		box.Precompute(&k, peer, &own.Private)
		return &k
	}
	var id [64]byte
	copy(id[:32], own.Public[:])
	copy(id[32:], peer[:])
	if k, ok := c.keys.get(id); ok {
		return k
	}
	k := new([32]byte)
	box.Precompute(k, peer, &own.Private)
	c.keys.put(id, k)
	return k
}

// seal encrypts plaintext for peer with authcrypt (nacl box).
func (c *SharedKeys) seal(plaintext []byte, nonce *[24]byte, own *AgreementKey, peer *[32]byte) []byte {
	return box.SealAfterPrecomputation(nil, plaintext, nonce, c.get(own, peer))
}

// open decrypts ciphertext from peer; ok is false on any failure.
func (c *SharedKeys) open(ciphertext []byte, nonce *[24]byte, own *AgreementKey, peer *[32]byte) ([]byte, bool) {
	return box.OpenAfterPrecomputation(nil, ciphertext, nonce, c.get(own, peer))
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
