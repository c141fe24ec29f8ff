package bundle

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

func pub(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

// withSignatureTwice returns data with its first signature repeated: one
// key "signing twice".
func withSignatureTwice(t *testing.T, data []byte) []byte {
	t.Helper()
	in, err := Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := decodeSigned(in.SignedManifest)
	if err != nil {
		t.Fatal(err)
	}
	obj.signatures = append(obj.signatures, obj.signatures[0])
	item, err := obj.encode()
	if err != nil {
		t.Fatal(err)
	}
	return append(item, data[len(in.SignedManifest):]...)
}

// TestThresholdBypassBySameKeyTwice: one key cannot reach a threshold of 2
// by signing twice (the second signature is refused outright) nor by being
// trusted under two names (keys are counted by kid after deduplication).
func TestThresholdBypassBySameKeyTwice(t *testing.T) {
	a := testKey(1)
	data := build(t, smallDraft(t), a)
	p := &Policy{Keys: []TrustedKey{
		{Name: "alice", Key: pub(a), Scopes: []string{"org.example"}},
		{Name: "alice-again", Key: pub(a), Scopes: []string{"org.example"}},
	}, Thresholds: map[string]int{"org.example": 2}}
	_, _, err := readAll(data, p, testNow)
	expectName(t, err, ErrThreshold)
	var e *amp.Error
	if !errors.As(err, &e) {
		t.Fatal(err)
	}
	d, ok := e.Details.(ThresholdDetails)
	if !ok || d.Threshold != 2 || d.Valid != 1 || d.Scope != "org.example" || len(d.Signers) != 1 {
		t.Fatalf("details %+v", e.Details)
	}
	_, _, err = readAll(withSignatureTwice(t, data), p, testNow)
	expectName(t, err, ErrDuplicateSigner)
	// A writer refuses the same key twice.
	var buf bytes.Buffer
	_, err = Write(&buf, smallDraft(t), []ed25519.PrivateKey{a, a}, WriteOptions{})
	expectName(t, err, ErrDuplicateSigner)
}

// TestThresholdBypassByKeyTrustedForAnotherScope: a valid signature by a
// key trusted only for another scope does not count.
func TestThresholdBypassByKeyTrustedForAnotherScope(t *testing.T) {
	a, b, c := testKey(1), testKey(2), testKey(3)
	data := build(t, smallDraft(t), a, b, c)
	p := &Policy{Keys: []TrustedKey{
		{Name: "alice", Key: pub(a), Scopes: []string{"org.example"}},
		{Name: "bob", Key: pub(b), Scopes: []string{"org.other"}},
	}, Thresholds: map[string]int{"org.example": 2}}
	_, _, err := readAll(data, p, testNow)
	expectName(t, err, ErrThreshold)
	var e *amp.Error
	errors.As(err, &e)
	d := e.Details.(ThresholdDetails)
	if d.Valid != 1 || len(d.Signers) != 2 || d.Signers[0].Counted == d.Signers[1].Counted {
		t.Fatalf("details %+v", d)
	}
	for _, want := range []string{"alice", "bob", "org.other", "not counted", "needs 2", "found 1"} {
		if !bytes.Contains([]byte(e.Message), []byte(want)) {
			t.Errorf("message %q does not say %q", e.Message, want)
		}
	}
	// bob trusted for the scope too: 2 of 3 (carol is unknown, ignored).
	p.Keys[1].Scopes = []string{"org.example"}
	if _, _, err := readAll(data, p, testNow); err != nil {
		t.Fatal(err)
	}
	// The largest threshold over the names applies: the DID document of
	// agents.example.org needs 3.
	p.Thresholds["org.example.agents"] = 3
	_, _, err = readAll(data, p, testNow)
	expectName(t, err, ErrThreshold)
}

// TestThresholdBadSignatureByTrustedKeyRejects: a trusted key's signature
// that does not verify rejects the bundle, however many others verify.
func TestThresholdBadSignatureByTrustedKeyRejects(t *testing.T) {
	a, b := testKey(1), testKey(2)
	data := build(t, smallDraft(t), a, b)
	in, _ := Inspect(bytes.NewReader(data), 0)
	obj, _ := decodeSigned(in.SignedManifest)
	obj.signatures[1].Sig = bytes.Clone(obj.signatures[1].Sig)
	obj.signatures[1].Sig[0] ^= 1
	item, _ := obj.encode()
	bad := append(item, data[len(in.SignedManifest):]...)
	p := &Policy{Keys: []TrustedKey{{Name: "alice", Key: pub(a), Scopes: []string{"*"}}, {Name: "bob", Key: pub(b), Scopes: []string{"*"}}}}
	_, _, err := readAll(bad, p, testNow)
	expectName(t, err, ErrBadSignature)
}

// TestCosignAddsOnlyASignature: two officers signing in two rooms produce
// the very file of a two-key build; the artifacts and manifest are never
// touched; a second signature by one key, a tampered artifact and a forged
// existing signature are refused before anything is signed.
func TestCosignAddsOnlyASignature(t *testing.T) {
	a, b, c := testKey(1), testKey(2), testKey(3)
	one := build(t, smallDraft(t), b)
	var two bytes.Buffer
	if _, err := Cosign(&two, bytes.NewReader(one), a, CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(two.Bytes(), build(t, smallDraft(t), a, b)) {
		t.Fatal("cosign differs from a two-key build")
	}
	in1, _ := Inspect(bytes.NewReader(one), 0)
	in2, _ := Inspect(bytes.NewReader(two.Bytes()), 0)
	if !bytes.Equal(one[len(in1.SignedManifest):], two.Bytes()[len(in2.SignedManifest):]) {
		t.Fatal("cosign changed the artifacts")
	}
	var three bytes.Buffer
	if _, err := Cosign(&three, bytes.NewReader(two.Bytes()), c, CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(three.Bytes(), build(t, smallDraft(t), c, b, a)) {
		t.Fatal("cosign of a third key differs from a three-key build")
	}
	tests := []struct {
		name string
		data []byte
		want amp.ErrName
	}{
		{"same key again", two.Bytes(), ErrDuplicateSigner},
		{"tampered artifact", append(bytes.Clone(one[:len(one)-1]), one[len(one)-1]^1), ErrHashMismatch},
		{"forged signature", func() []byte {
			obj, _ := decodeSigned(in1.SignedManifest)
			obj.signatures[0].Sig = bytes.Clone(obj.signatures[0].Sig)
			obj.signatures[0].Sig[5] ^= 1
			item, _ := obj.encode()
			return append(item, one[len(in1.SignedManifest):]...)
		}(), ErrBadSignature},
	}
	for _, tt := range tests {
		_, err := Cosign(io.Discard, bytes.NewReader(tt.data), a, CosignOptions{Now: func() time.Time { return testNow }})
		if !errors.Is(err, tt.want) {
			t.Errorf("%s: got %v, want %s", tt.name, err, tt.want)
		}
	}
}
