package bundle

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// manyKey is the i-th key of a large policy.
func manyKey(i int) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	seed[0], seed[1], seed[2] = byte(i), byte(i>>8), 0xf1
	return ed25519.NewKeyFromSeed(seed)
}

// manyKeysPolicy trusts n keys (manyKey) for "*".
func manyKeysPolicy(n int) *Policy {
	p := &Policy{}
	for i := range n {
		p.Keys = append(p.Keys, TrustedKey{Name: fmt.Sprintf("k%04d", i), Key: manyKey(i).Public().(ed25519.PublicKey), Scopes: []string{"*"}})
	}
	return p
}

// TestSignaturesAgainstManyTrustedKeysDoNotEncodeEveryKey: an authority
// may keep 1,000 keys of its account trusted (TRUST-25), and every
// signed object a store verifies (a bundle at import, a heartbeat, a
// statement, and a revocation's recount of each installed bundle whose
// record names no signers) looked each signature's kid up by encoding
// the did:key of every trusted key (Policy.find): MaxSignatures
// signatures cost 8,000 base58 encodings (docs/SPEC-DECISIONS.md
// SCALE-25). Now the kid is decoded once and compared with the keys'
// bytes. Allocations of one Verify are counted (each encoding allocates):
// with 1,000 keys, at most 4 per trusted key over what 8 keys cost;
// before, about 48 per key.
func TestSignaturesAgainstManyTrustedKeysDoNotEncodeEveryKey(t *testing.T) {
	signers := make([]ed25519.PrivateKey, MaxSignatures)
	for i := range signers {
		signers[i] = manyKey(992 + i) // the last keys of the large policy
	}
	data, err := SignObject(MediaTypeManifest, []byte("payload"), signers)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := DecodeObject(data, MediaTypeManifest)
	if err != nil {
		t.Fatal(err)
	}
	allocs := func(p *Policy) float64 {
		return testing.AllocsPerRun(3, func() {
			ks, err := obj.Verify(p)
			if err != nil || len(ks) != MaxSignatures {
				t.Fatalf("verified %d signers, %v; want %d", len(ks), err, MaxSignatures)
			}
		})
	}
	small := manyKeysPolicy(1000)
	small.Keys = small.Keys[992:] // the 8 signers alone
	few, many := allocs(small), allocs(manyKeysPolicy(1000))
	t.Logf("allocations of one Verify of %d signatures: %.0f with 8 keys trusted, %.0f with 1,000", MaxSignatures, few, many)
	if per := (many - few) / 992; per > 4 {
		t.Fatalf("one Verify of %d signatures allocated %.1f times more per trusted key (%.0f with 1,000 keys, %.0f with 8): every key's did:key is encoded per signature",
			MaxSignatures, per, many, few)
	}
}

// TestFindAnswersAsEncodingEveryKeyDoes: find decodes the kid of a large
// policy instead of encoding every key; a kid it matched to another key,
// or missed, would count a signature for the wrong key or for none. For
// policies on both sides of findByDecodingAbove, with keys no kid can
// decode to (small order, off the curve, of 31 bytes) and one key under
// two names, find returns the key (the first of its kid) that encoding
// every key's did:key returns, for every kid.
func TestFindAnswersAsEncodingEveryKeyDoes(t *testing.T) {
	identity := make(ed25519.PublicKey, ed25519.PublicKeySize)
	identity[0] = 1 // small order: no did:key document decodes from it
	var offCurve ed25519.PublicKey
	for i := 0; offCurve == nil; i++ {
		k := make(ed25519.PublicKey, ed25519.PublicKeySize)
		k[0], k[1] = byte(i), 0x42
		if _, err := amp.X25519PublicFromEd25519(k); err != nil && amp.CheckEd25519PublicKey(k) == nil {
			offCurve = k
		}
	}
	short := ed25519.PublicKey(manyKey(7).Public().(ed25519.PublicKey)[:31])
	odd := []TrustedKey{{Name: "identity", Key: identity}, {Name: "offcurve", Key: offCurve}, {Name: "short", Key: short}}
	reference := func(p *Policy, kid string) (*TrustedKey, bool) {
		for i := range p.Keys {
			if amp.DIDKey(p.Keys[i].Key) == kid {
				return &p.Keys[i], true
			}
		}
		return nil, false
	}
	for _, n := range []int{3, 8, 9, 40} { // findByDecodingAbove is 8
		p := manyKeysPolicy(n)
		p.Keys = append(p.Keys, odd...)
		p.Keys = append(p.Keys, TrustedKey{Name: "again", Key: p.Keys[1].Key}) // one key, two names
		kids := []string{amp.DIDKey(manyKey(500).Public().(ed25519.PublicKey)), "did:key:zzzz", "", "did:key:" + amp.EncodeMultikey(amp.KeyX25519, manyKey(1).Public().(ed25519.PublicKey))}
		for _, k := range p.Keys {
			kids = append(kids, amp.DIDKey(k.Key), amp.DIDKey(k.Key)+"#x")
		}
		for _, kid := range kids {
			got, gotOK := p.find([]byte(kid))
			want, wantOK := reference(p, kid)
			if got != want || gotOK != wantOK {
				t.Fatalf("%d keys, kid %q: find gave %v %v, encoding every key %v %v", n, kid, got, gotOK, want, wantOK)
			}
		}
	}
}
