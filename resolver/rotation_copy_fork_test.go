package resolver

import (
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// payloadLinked is trust statement seq of org.example whose prev is the
// SHA-256 of prev's payload (docs/FORMAT.md §22, as ampbundle rotate
// writes it), adding add, signed by signers.
func payloadLinked(t *testing.T, prev []byte, seq uint64, add map[string]ed25519.PrivateKey, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	_, obj, err := bundle.ParseRotation(prev)
	if err != nil {
		t.Fatal(err)
	}
	r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: "org.example", Sequence: seq, Prev: obj.PayloadSHA256(),
		CreatedAt: "2026-11-22T00:00:00Z", Threshold: 1}
	for n, k := range add {
		r.Add = append(r.Add, bundle.NamedKey{Name: n, Key: amp.DIDKey(pub(k))})
	}
	r.Normalize()
	data, err := bundle.SignRotation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestARotationReSignedByNobodyAppliedFirstDoesNotForkTheChain (review
// 10, finding 3): a's trust statement 1 is public before a store applies
// it. Anyone co-signs it with a key nobody trusts and has that copy
// applied first; it verifies with a as its only trusted signer. Linked by
// the SHA-256 of the file applied, statement 2 was then rotation_fork at
// that store for good. Linked by the payload (TRUST-19), statement 2
// applies after the copy; the genuine statement 1, or another copy, is
// statement 1 (unchanged), not a fork; and a statement 2 linked by file,
// as earlier writers wrote it, still applies after the file it names.
func TestARotationReSignedByNobodyAppliedFirstDoesNotForkTheChain(t *testing.T) {
	a, b, c := testKeyN(41), testKeyN(42), testKeyN(43)
	s1 := rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"b": b}, nil, a)

	t.Run("payload link after a copy", func(t *testing.T) {
		s := rotationStore(t)
		if _, err := s.ApplyRotation(cosignedByNobody(t, s1, 220)); err != nil {
			t.Fatal(err)
		}
		for i, again := range [][]byte{s1, cosignedByNobody(t, s1, 221)} {
			res, err := s.ApplyRotation(again)
			if err != nil || !res.Unchanged {
				t.Fatalf("statement 1 under other signatures (%d) after a copy: %+v %v, want unchanged", i, res, err)
			}
		}
		res, err := s.ApplyRotation(payloadLinked(t, s1, 2, map[string]ed25519.PrivateKey{"c": c}, b))
		if err != nil || res.Sequence != 2 {
			t.Fatalf("after a copy of statement 1 re-signed by a key nobody trusts was applied first, the authority's statement 2 is refused: %+v %v", res, err)
		}
		if n := keptStatements(t, s); n != 2 {
			t.Fatalf("%d statements kept, want 2", n)
		}
	})
	t.Run("file link after the original", func(t *testing.T) {
		s := rotationStore(t)
		if _, err := s.ApplyRotation(s1); err != nil {
			t.Fatal(err)
		}
		if _, err := s.ApplyRotation(rotation(t, s1, 2, 1, map[string]ed25519.PrivateKey{"c": c}, nil, b)); err != nil {
			t.Fatalf("statement 2 linked by the file of statement 1, as earlier writers link: %v", err)
		}
	})
	t.Run("a link to neither forks", func(t *testing.T) {
		s := rotationStore(t)
		if _, err := s.ApplyRotation(s1); err != nil {
			t.Fatal(err)
		}
		other := rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"c": c}, nil, a)
		_, err := s.ApplyRotation(payloadLinked(t, other, 2, nil, b))
		expectName(t, err, ErrRotationFork)
		_, err = s.ApplyRotation(other)
		expectName(t, err, ErrRotationFork)
	})
}
