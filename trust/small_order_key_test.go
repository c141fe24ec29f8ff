package trust_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/internal/testkeys"
	"github.com/ampbundle/ampbundle/trust"
)

// identityKey is the encoding of the identity point: for it the forged
// signature R = identity, S = 0 verifies every message.
func identityKey() ed25519.PublicKey {
	k := make(ed25519.PublicKey, ed25519.PublicKeySize)
	k[0] = 0x01
	return k
}

// TestSmallOrderKeyCannotBeTrusted: an operator handed a small-order key
// as "the publisher's key" runs ampbundle trust add with it. Before, AddKey
// checked only its length and trusted it; crypto/ed25519.Verify accepts
// the forged signature R = identity, S = 0 for such a key on a large share
// of all messages (every one, for the identity), so anybody could then
// sign bundles the store installs. Expected: invalid_trust, nothing
// trusted.
func TestSmallOrderKeyCannotBeTrusted(t *testing.T) {
	for name, k := range testkeys.SmallOrderEd25519(t) {
		t.Run(name, func(t *testing.T) {
			st := (&trust.State{}).Clone()
			next, eff, err := trust.AddKey(st, "publisher", k, []string{"org.example"}, 0, now)
			if !errors.Is(err, trust.ErrInvalidTrust) {
				t.Fatalf("AddKey of a small-order key: got %v, want invalid_trust", err)
			}
			if next != nil || eff != nil || len(st.Keys) != 0 {
				t.Fatal("a refused AddKey returned a state or changed its input")
			}
		})
	}
	real := seedKey(0x91)
	if _, _, err := trust.AddKey((&trust.State{}).Clone(), "publisher", pub(real), []string{"org.example"}, 0, now); err != nil {
		t.Fatalf("AddKey of a genuine key: %v", err)
	}
}

// TestSmallOrderKeyInAStatementOrPolicyFileCannotBeTrusted: the other ways
// a key enters the trust state, a policy file and a trust statement's
// added keys, name it as a did:key, which bundle.KeyFromKID expands
// (amp.DIDKeyDocument refuses small-order keys). This keeps them refused:
// invalid_policy, and the statement refused before anything is trusted.
func TestSmallOrderKeyInAStatementOrPolicyFileCannotBeTrusted(t *testing.T) {
	owner := seedKey(0x92)
	for name, k := range testkeys.SmallOrderEd25519(t) {
		t.Run(name, func(t *testing.T) {
			st := state(t, map[string][]string{"owner": {"org.example"}}, map[string]ed25519.PrivateKey{"owner": owner})
			d := amp.DIDKey(k)
			file := &trust.PolicyFile{Keys: []trust.PolicyKey{{Name: "bad", Key: d, Scopes: []string{"org.example"}}}}
			if _, _, err := trust.ApplyPolicy(st, file, now); !errors.Is(err, trust.ErrInvalidPolicy) {
				t.Fatalf("ApplyPolicy trusting %s: got %v, want invalid_policy", d, err)
			}
			r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: "org.example", Sequence: 1, Prev: make([]byte, 32),
				CreatedAt: "2026-11-22T12:00:00Z", Threshold: 1, Add: []bundle.NamedKey{{Name: "bad", Key: d}}}
			r.Normalize()
			data, err := bundle.SignRotation(r, []ed25519.PrivateKey{owner})
			if err == nil { // SignRotation may refuse it first
				next, _, err := trust.ApplyRotation(st, data, now)
				if err == nil {
					t.Fatalf("ApplyRotation trusted %s as %+v", d, next.Keys["bad"])
				}
				if !errors.Is(err, bundle.ErrInvalidStatement) {
					t.Fatalf("ApplyRotation adding %s: got %v, want invalid_statement", d, err)
				}
			}
		})
	}
}

// forgeSignature returns data with the first signature of its signed
// manifest replaced by R = identity, S = 0 under the kid of key.
func forgeSignature(t testing.TB, data []byte, key ed25519.PublicKey) []byte {
	t.Helper()
	in, err := bundle.Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := bundle.DecodeObject(in.SignedManifest, bundle.MediaTypeManifest)
	if err != nil {
		t.Fatal(err)
	}
	if len(obj.Signatures) != 1 {
		t.Fatalf("the sample has %d signatures, want 1", len(obj.Signatures))
	}
	s := obj.Signatures[0]
	kid := amp.DIDKey(key)
	if len(kid) != len(s.KID) || bytes.Count(data, []byte(s.KID)) != 1 || bytes.Count(data, s.Sig) != 1 {
		t.Fatal("cannot patch the sample's kid and signature in place")
	}
	forged := make([]byte, ed25519.SignatureSize)
	forged[0] = 0x01
	out := bytes.Replace(data, []byte(s.KID), []byte(kid), 1)
	return bytes.Replace(out, s.Sig, forged, 1)
}

// TestSmallOrderKeyOfAnOlderStoreVerifiesNothing: a store written before
// AddKey refused small-order keys may still trust one (loaded from its
// trust records as it was). A bundle reader handed the store's Policy
// checks a signature by a trusted key against that key directly
// (bundle/cose.go checkSignature), so before, the sample bundle with its
// signature replaced by R = identity, S = 0 under the kid of the identity
// key verified as signed by the trusted key "old". Expected: the key is
// trusted for nothing (Policy leaves it out, it covers no scope), and
// the forged bundle is refused.
func TestSmallOrderKeyOfAnOlderStoreVerifiesNothing(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(samples, "translate.ampb"))
	if err != nil {
		t.Fatal(err)
	}
	key := identityKey()
	forged := forgeSignature(t, data, key)
	st := (&trust.State{}).Clone()
	st.Keys["old"] = trust.Key{Name: "old", Key: key, Scopes: []string{"*"}, AddedAt: "2026-01-01T00:00:00Z"}
	clock := func() time.Time { return now }
	rd, err := bundle.NewReader(bytes.NewReader(forged), bundle.ReaderOptions{Policy: st.Policy(), Now: clock})
	if err == nil {
		t.Fatalf("a bundle signed by no one verified as signed by %v under an older store's small-order key", rd.Signers())
	}
	for _, k := range st.Policy().Keys {
		if bytes.Equal(k.Key, key) {
			t.Fatal("Policy hands the small-order key to the bundle reader")
		}
	}
	if _, err := st.VerifyingPolicy(); !errors.Is(err, bundle.ErrUntrustedKey) {
		t.Fatalf("VerifyingPolicy of a store whose only key is of small order: got %v, want untrusted_key", err)
	}
	// The same store with a genuine key as well still reads the genuine
	// bundle.
	st.Keys["example"] = trust.Key{Name: "example", Key: pub(sampleKey(t, "example-publisher")), Scopes: []string{"*"}}
	if _, err := bundle.NewReader(bytes.NewReader(data), bundle.ReaderOptions{Policy: st.Policy(), Now: clock}); err != nil {
		t.Fatalf("the genuine bundle: %v", err)
	}
	if _, err := bundle.NewReader(bytes.NewReader(forged), bundle.ReaderOptions{Policy: st.Policy(), Now: clock}); err == nil {
		t.Fatal("the forged bundle verified beside a genuine key")
	}
}
