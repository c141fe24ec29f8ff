package resolver

import (
	"bytes"
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestACopyOfAnAppliedTrustStatementIsVerifiedBeforeItIsUnchanged (review
// 16): trust statement 1 of org.example is applied. Anyone offers another
// file of its payload whose signatures do not verify for this store: a's
// own signature with a byte altered, or the payload re-signed by a
// throwaway key alone. ApplyRotation judged the chain position first and
// answered any file of the applied payload unchanged before looking at a
// signature (an import of a tampered file reported success), while a copy
// of a revocation is verified (bad_signature). Now a copy is verified as
// any statement before it is unchanged; the file applied, and a copy
// validly co-signed, still are unchanged.
func TestACopyOfAnAppliedTrustStatementIsVerifiedBeforeItIsUnchanged(t *testing.T) {
	a, b := testKeyN(41), testKeyN(42)
	s1 := rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"b": b}, nil, a)
	_, obj, err := bundle.ParseRotation(s1)
	if err != nil {
		t.Fatal(err)
	}
	tampered := bytes.Clone(s1)
	i := bytes.Index(tampered, obj.Signatures[0].Sig)
	if i < 0 {
		t.Fatal("test setup: a's signature not found")
	}
	tampered[i] ^= 1
	byNobody, err := bundle.SignObject(bundle.MediaTypeRotation, obj.Payload, []ed25519.PrivateKey{testKeyN(253)})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want amp.ErrName // "": unchanged
	}{
		{"its signature altered", tampered, bundle.ErrBadSignature},
		{"a forged co-signature", withForgedCoSignature(t, s1, 251), bundle.ErrBadSignature},
		{"re-signed by a throwaway key alone", byNobody, bundle.ErrUntrustedKey},
		{"the file applied", s1, ""},
		{"validly co-signed by a key nobody trusts", cosignedByNobody(t, s1, 251), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := rotationStore(t)
			if _, err := s.ApplyRotation(s1); err != nil {
				t.Fatal(err)
			}
			res, err := s.ApplyRotation(tc.data)
			if tc.want == "" {
				if err != nil || !res.Unchanged {
					t.Fatalf("%+v %v, want unchanged", res, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("a copy of applied trust statement 1 whose signatures do not verify for this store was answered %+v, want %s", res, tc.want)
			}
			expectName(t, err, tc.want)
		})
	}
}
