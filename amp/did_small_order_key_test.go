package amp

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"math/big"
	"testing"
	"time"
)

// orderTwoKey is the encoding of the Ed25519 point (0, -1), of order 2
// (y = p - 1: bytes ec ff .. ff 7f). No private key exists for it.
func orderTwoKey() []byte {
	a := bytes.Repeat([]byte{0xff}, 32)
	a[0], a[31] = 0xec, 0x7f
	return a
}

// forgedSmallOrderSig is R = the identity point (01 00 .. 00) and S = 0:
// for a key A of small order, [S]B - [k]A == R holds whenever [k]A is the
// identity, which for A of order 2 is whenever k is even.
func forgedSmallOrderSig() []byte {
	sig := make([]byte, SigSize)
	sig[0] = 0x01
	return sig
}

// TestSmallOrderDIDKeyLetsAnyoneSignAsIt covers a did:key whose key no
// sender owns: every sender could sign as it.
//
// Attack: the sender names itself did:key:<A> where A is a point of order 2
// (orderTwoKey). The forged signature is R = the identity and S = 0: Ed25519
// verification checks [S]B - [k]A == R with k = H(R || A || Sig_Input), and
// [k]A is the identity whenever k is even, so the same 64 bytes verify for
// about half of all messages; the forger tries a few message ids until one
// is accepted.
//
// Before: X25519PublicFromEd25519 refused only y >= p, y == 1 and points
// off the curve, so DIDKeyDocument expanded the key (its X25519 form is the
// all-zero u, whose authcrypt shared key is public too), and
// crypto/ed25519.Verify, which does not refuse small-order keys, accepted
// the forged signature: Receive returned the message as authenticated from
// that DID.
//
// Should: a did:key of small order is refused when the DID document is
// built (3001, invalid_did_document under unknown_did), as libsodium's
// crypto_sign_verify_detached and RFC 8032-strict verifiers refuse such
// keys, so no message is authenticated as a sender that nobody owns.
func TestSmallOrderDIDKeyLetsAnyoneSignAsIt(t *testing.T) {
	f := newFixture(t)
	a := orderTwoKey()
	from := DIDKey(a)
	sig := forgedSmallOrderSig()
	ts := uint64(f.now.UnixMilli())
	accepted, wouldVerify := 0, 0
	for i := 0; i < 32; i++ {
		m := &Message{V: 1, Type: TypeMessage, TS: ts, TTL: 60_000, From: from, To: To(f.bob.DID), Body: hx("a1616101"), Sig: sig}
		binary.BigEndian.PutUint64(m.ID[:8], ts)
		binary.BigEndian.PutUint64(m.ID[8:], uint64(i)+1)
		if ed25519.Verify(a, m.AppendSigInput(nil), sig) {
			wouldVerify++ // the threat is real: the standard library accepts it
		}
		got, err := f.recv.Receive(context.Background(), m.Encode())
		if err == nil {
			accepted++
			if got.From != from {
				t.Fatalf("accepted message has sender %q", got.From)
			}
			continue
		}
		if CodeOf(err) != CodeUnauthorized || !errors.Is(err, ErrName("invalid_did_document")) {
			t.Fatalf("message %d: got %v, want 3001 with invalid_did_document as its cause", i, err)
		}
	}
	if wouldVerify == 0 {
		t.Fatal("the forged signature verifies for none of 32 messages: the attack is not exercised")
	}
	if accepted > 0 {
		t.Fatalf("%d of 32 messages signed by no one were accepted as authenticated from %s (a small-order did:key); want every one refused with 3001", accepted, from)
	}
}

// refusedEd25519Keys returns the 14 encodings of the points of order
// dividing 8 (smallOrderY with either sign bit) and two non-canonical
// encodings (y >= p) of other values.
func refusedEd25519Keys() map[string][]byte {
	out := map[string][]byte{}
	for i, y := range smallOrderY {
		for _, sign := range []byte{0, 0x80} {
			k := bytes.Clone(y[:])
			k[31] |= sign
			out["small order "+string(rune('0'+i))+map[byte]string{0: "+", 0x80: "-"}[sign]] = k
		}
	}
	allOnes := bytes.Repeat([]byte{0xff}, 32)
	allOnes[31] = 0x7f // y = 2^255 - 1 = p + 18
	out["non-canonical y = p + 18"] = allOnes
	p3 := bytes.Clone(smallOrderY[6][:])
	p3[0]++ // y = p + 2
	out["non-canonical y = p + 2"] = p3
	return out
}

// TestSmallOrderEd25519KeysAreRefusedWherePeerBytesBecomeKeys covers every
// path in this package where a peer's bytes become an Ed25519 key a
// signature is checked against: did:key expansion, the three encodings of a
// DID document's Ed25519 method, the X25519 map, and the selection of the
// signing key of a document put together by other code (a resolver).
func TestSmallOrderEd25519KeysAreRefusedWherePeerBytesBecomeKeys(t *testing.T) {
	good := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, 32)).Public().(ed25519.PublicKey)
	doc := func(method string) []byte {
		return []byte(`{"id":"did:web:a.example","verificationMethod":[` + method + `],"assertionMethod":["#k"]}`)
	}
	paths := map[string]func(k []byte) error{
		"CheckEd25519PublicKey":   CheckEd25519PublicKey,
		"X25519PublicFromEd25519": func(k []byte) error { _, err := X25519PublicFromEd25519(k); return err },
		"did:key": func(k []byte) error {
			_, err := DIDKeyDocument(DIDKey(k))
			if err != nil && !errors.Is(err, ErrName("invalid_did_document")) {
				t.Errorf("did:key: %v is not invalid_did_document", err)
			}
			return err
		},
		"Multikey": func(k []byte) error {
			_, err := ParseDIDDocument(doc(`{"id":"#k","controller":"did:web:a.example","type":"Multikey","publicKeyMultibase":"` + EncodeMultikey(KeyEd25519, k) + `"}`))
			return err
		},
		"Ed25519VerificationKey2018": func(k []byte) error {
			_, err := ParseDIDDocument(doc(`{"id":"#k","controller":"did:web:a.example","type":"Ed25519VerificationKey2018","publicKeyBase58":"` + base58Encode(k) + `"}`))
			return err
		},
		"JsonWebKey2020": func(k []byte) error {
			_, err := ParseDIDDocument(doc(`{"id":"#k","controller":"did:web:a.example","type":"JsonWebKey2020","publicKeyJwk":{"kty":"OKP","crv":"Ed25519","x":"` + base64.RawURLEncoding.EncodeToString(k) + `"}}`))
			return err
		},
		"SigningKey of a hand-built document": func(k []byte) error {
			d := &DIDDocument{ID: "did:web:a.example",
				Methods:         []VerificationMethod{{ID: "did:web:a.example#k", KeyType: KeyEd25519, PublicKey: k}},
				AssertionMethod: []string{"did:web:a.example#k"}}
			for _, from := range []string{"did:web:a.example", "did:web:a.example#k"} {
				if _, err := d.SigningKey(from, time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)); err != nil {
					if !errors.Is(err, ErrName("invalid_did_document")) {
						t.Errorf("SigningKey: %v is not invalid_did_document", err)
					}
					return err
				}
			}
			return nil
		},
	}
	for name, path := range paths {
		t.Run(name, func(t *testing.T) {
			if err := path(good); err != nil {
				t.Fatalf("a real key is refused: %v", err)
			}
			for kname, k := range refusedEd25519Keys() {
				err := path(k)
				if err == nil {
					t.Errorf("%s (%x) accepted", kname, k)
				} else if CodeOf(err) != CodeUnauthorized {
					t.Errorf("%s: got %v, want 3001", kname, err)
				}
			}
		})
	}
}

// TestReceiveRefusesASmallOrderKeyFromAResolver covers a did:web sender
// whose resolver (code outside this package) hands over a document with a
// small-order signing key: Receive refuses it with 3001 before the forged
// signature is checked.
func TestReceiveRefusesASmallOrderKeyFromAResolver(t *testing.T) {
	f := newFixture(t)
	const did = "did:web:nobody.example"
	f.resolver[did] = &DIDDocument{ID: did,
		Methods:         []VerificationMethod{{ID: did + "#k", KeyType: KeyEd25519, PublicKey: orderTwoKey()}},
		AssertionMethod: []string{did + "#k"}}
	ts := uint64(f.now.UnixMilli())
	for i := 0; i < 8; i++ {
		m := &Message{V: 1, Type: TypeMessage, TS: ts, TTL: 60_000, From: did, To: To(f.bob.DID), Body: hx("a1616101"), Sig: forgedSmallOrderSig()}
		binary.BigEndian.PutUint64(m.ID[:8], ts)
		binary.BigEndian.PutUint64(m.ID[8:], uint64(i)+1)
		_, err := f.recv.Receive(context.Background(), m.Encode())
		if !errors.Is(err, ErrName("invalid_did_document")) || CodeOf(err) != CodeUnauthorized {
			t.Fatalf("message %d: got %v, want 3001 invalid_did_document", i, err)
		}
	}
}

// TestSmallOrderListIsTheEightTorsionPoints checks smallOrderY against the
// curve itself, with affine Edwards arithmetic: every listed y (reduced mod
// p) is a point whose 8-fold multiple is the identity, and the multiples of
// one point of order 8 (the torsion subgroup is cyclic of order 8) are all
// listed, so no point of small order is missing.
func TestSmallOrderListIsTheEightTorsionPoints(t *testing.T) {
	p := curveP()
	d := curveD(p)
	one := big.NewInt(1)
	mod := func(x *big.Int) *big.Int { return x.Mod(x, p) }
	type point struct{ x, y *big.Int }
	add := func(a, b point) point {
		// -x^2 + y^2 = 1 + d x^2 y^2 (RFC 8032 §5.1.4).
		t := mod(new(big.Int).Mul(d, mod(new(big.Int).Mul(mod(new(big.Int).Mul(a.x, b.x)), mod(new(big.Int).Mul(a.y, b.y))))))
		xn := mod(new(big.Int).Add(new(big.Int).Mul(a.x, b.y), new(big.Int).Mul(a.y, b.x)))
		yn := mod(new(big.Int).Add(new(big.Int).Mul(a.y, b.y), new(big.Int).Mul(a.x, b.x)))
		xd := new(big.Int).ModInverse(mod(new(big.Int).Add(one, t)), p)
		yd := new(big.Int).ModInverse(mod(new(big.Int).Sub(one, t)), p)
		return point{mod(xn.Mul(xn, xd)), mod(yn.Mul(yn, yd))}
	}
	decode := func(enc []byte) point {
		le := make([]byte, 32)
		for i := range le {
			le[i] = enc[31-i]
		}
		le[0] &= 0x7f
		y := mod(new(big.Int).SetBytes(le))
		y2 := mod(new(big.Int).Mul(y, y))
		num := mod(new(big.Int).Sub(y2, one))
		den := mod(new(big.Int).Add(new(big.Int).Mul(d, y2), one))
		x2 := mod(new(big.Int).Mul(num, new(big.Int).ModInverse(den, p)))
		x := new(big.Int).ModSqrt(x2, p)
		if x == nil {
			t.Fatalf("%x is not on the curve", enc)
		}
		return point{x, y}
	}
	identity := point{big.NewInt(0), big.NewInt(1)}
	equal := func(a, b point) bool { return a.x.Cmp(b.x) == 0 && a.y.Cmp(b.y) == 0 }
	for _, y := range smallOrderY {
		pt := decode(y[:])
		q := pt
		for range 7 {
			q = add(q, pt)
		}
		if !equal(q, identity) {
			t.Errorf("%x: [8]P is not the identity", y)
		}
	}
	g := decode(smallOrderY[2][:])
	listed := func(pt point) bool {
		enc := pt.y.FillBytes(make([]byte, 32))
		for i, j := 0, 31; i < j; i, j = i+1, j-1 {
			enc[i], enc[j] = enc[j], enc[i]
		}
		return CheckEd25519PublicKey(enc) != nil
	}
	q, seen := identity, map[string]bool{}
	for range 8 {
		if !listed(q) {
			t.Errorf("torsion point with y %v is not refused", q.y)
		}
		seen[q.x.String()+","+q.y.String()] = true
		q = add(q, g)
	}
	if len(seen) != 8 || !equal(q, identity) {
		t.Fatalf("smallOrderY[2] does not generate the 8 torsion points (%d distinct)", len(seen))
	}
}
