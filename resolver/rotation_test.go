package resolver

import (
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// rotation signs a trust statement for org.example after prev (nil for
// the first).
func rotation(t *testing.T, prev []byte, seq uint64, threshold uint64, add map[string]ed25519.PrivateKey, retire []ed25519.PrivateKey, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	r := &bundle.Rotation{Format: bundle.RotationFormat, Scope: "org.example", Sequence: seq, Prev: make([]byte, 32),
		CreatedAt: "2026-11-22T00:00:00Z", Threshold: threshold}
	if prev != nil {
		r.Prev = sha256sum(prev)
	}
	for n, k := range add {
		r.Add = append(r.Add, bundle.NamedKey{Name: n, Key: amp.DIDKey(pub(k))})
	}
	for _, k := range retire {
		r.Retire = append(r.Retire, amp.DIDKey(pub(k)))
	}
	r.Normalize()
	data, err := bundle.SignRotation(r, signers)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// rotationStore trusts key a (seed 41) for org.example, alone.
func rotationStore(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	if err := s.TrustAdd("a", pub(testKeyN(41)), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// chain returns three statements: 1 (by a) adds b; 2 (by b) adds c,
// retires a and sets the threshold to 2; 3 (by b and c) adds d.
func chain(t *testing.T) [][]byte {
	a, b, c, d := testKeyN(41), testKeyN(42), testKeyN(43), testKeyN(44)
	s1 := rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"b": b}, nil, a)
	s2 := rotation(t, s1, 2, 2, map[string]ed25519.PrivateKey{"c": c}, []ed25519.PrivateKey{a}, b)
	s3 := rotation(t, s2, 3, 2, map[string]ed25519.PrivateKey{"d": d}, nil, b, c)
	return [][]byte{s1, s2, s3}
}

// TestRotationChainSkippedThenWalkedInOrder: an operator who missed
// several rotations applies them offline, in order; out of order is a gap
// naming what is missing; applying one again changes nothing.
func TestRotationChainSkippedThenWalkedInOrder(t *testing.T) {
	s := rotationStore(t)
	ss := chain(t)
	for _, i := range []int{2, 1} {
		_, err := s.ApplyRotation(ss[i])
		expectName(t, err, ErrRotationGap)
	}
	for i, st := range ss {
		res, err := s.ApplyRotation(st)
		if err != nil || res.Sequence != uint64(i+1) || res.Unchanged {
			t.Fatalf("statement %d: %+v %v", i+1, res, err)
		}
	}
	res, err := s.ApplyRotation(ss[1])
	if err != nil || !res.Unchanged {
		t.Fatalf("again: %+v %v", res, err)
	}
	keys, _ := s.TrustList()
	var names []string
	for _, k := range keys {
		names = append(names, k.Name)
	}
	if len(names) != 3 || names[0] != "b" || names[2] != "d" {
		t.Fatalf("trusted after the chain: %v", names)
	}
	chains, _ := s.TrustChains()
	if chains["org.example"] != 3 {
		t.Fatalf("chains %v", chains)
	}
	if e := lastAudit(t, s); e.Action != "rotate" || e.Sequence != 3 {
		t.Fatalf("audit %+v", e)
	}
}

// TestRotationChainFork: a second statement with an applied number, or one
// chaining to another predecessor, is refused and changes nothing.
func TestRotationChainFork(t *testing.T) {
	s := rotationStore(t)
	ss := chain(t)
	for _, st := range ss[:2] {
		if _, err := s.ApplyRotation(st); err != nil {
			t.Fatal(err)
		}
	}
	b, c, e := testKeyN(42), testKeyN(43), testKeyN(45)
	other2 := rotation(t, ss[0], 2, 1, map[string]ed25519.PrivateKey{"e": e}, nil, b)
	wrongPrev := rotation(t, other2, 3, 2, map[string]ed25519.PrivateKey{"e": e}, nil, b, c)
	for name, st := range map[string][]byte{"another statement 2": other2, "3 after another 2": wrongPrev} {
		before := dumpBesidesAudit(t, s)
		_, err := s.ApplyRotation(st)
		if !errors.Is(err, ErrRotationFork) {
			t.Fatalf("%s: %v", name, err)
		}
		if dumpBesidesAudit(t, s) != before {
			t.Fatalf("%s changed the store", name)
		}
	}
}

// TestThresholdBypassByRetiredKey: once a statement retired key a, its
// signatures count for nothing: neither toward a bundle's threshold nor
// toward the next statement's.
func TestThresholdBypassByRetiredKey(t *testing.T) {
	s := rotationStore(t)
	ss := chain(t)
	for _, st := range ss[:2] {
		if _, err := s.ApplyRotation(st); err != nil {
			t.Fatal(err)
		}
	}
	a, b, c := testKeyN(41), testKeyN(42), testKeyN(43)
	_, err := importBytes(t, s, cosigned(t, 1, a, b), ImportOptions{})
	expectName(t, err, bundle.ErrThreshold)
	_, err = s.ApplyRotation(rotation(t, ss[1], 3, 2, nil, nil, a, b))
	expectName(t, err, bundle.ErrThreshold)
	mustImport(t, s, cosigned(t, 1, b, c))
	// A statement below the threshold, and one leaving too few keys.
	_, err = s.ApplyRotation(rotation(t, ss[1], 3, 2, nil, nil, c))
	expectName(t, err, bundle.ErrThreshold)
	_, err = s.ApplyRotation(rotation(t, ss[1], 3, 2, nil, []ed25519.PrivateKey{c}, b, c))
	expectName(t, err, bundle.ErrInvalidStatement)
}
