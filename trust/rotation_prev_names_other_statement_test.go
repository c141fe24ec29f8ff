package trust_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// TestPrevNamingAnotherKeptStatementForks (review 16; a pinned
// property).
//
// Threat: prev may now be the SHA-256 of a payload (TRUST-19), and the
// store keeps revocations and trust statements in one index of payloads.
// A statement n whose prev names the payload of some other statement the
// store applied — a revocation of the same scope, or an earlier link of
// the chain — must not be taken as chaining to n-1: that would let a
// fork be written against any statement the store keeps.
//
// Verified: chainHead offers only the payload and the applied file of the
// scope's last statement (State.Chains[scope]); two chain positions never
// share a payload, since scope and sequence are in it. Keep it so.
func TestPrevNamingAnotherKeptStatementForks(t *testing.T) {
	a, b, c := seedKey(61), seedKey(62), seedKey(63)
	st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
	s1 := rotation(t, 1, nil, 1, []bundle.NamedKey{{Name: "b", Key: did(b)}}, nil, a)
	st, _, err := trust.ApplyRotation(st, s1, now)
	if err != nil {
		t.Fatal(err)
	}
	rev := revocation(t, "org.example", []string{did(seedKey(64))}, a)
	st, _, err = trust.ApplyRevocation(st, rev, now)
	if err != nil {
		t.Fatal(err)
	}
	payload := func(data []byte, ct string) []byte {
		obj, err := bundle.DecodeObject(data, ct)
		if err != nil {
			t.Fatal(err)
		}
		return obj.PayloadSHA256()
	}
	add := func(k ed25519.PrivateKey, name string) []bundle.NamedKey {
		return []bundle.NamedKey{{Name: name, Key: did(k)}}
	}
	_, _, err = trust.ApplyRotation(st, rotation(t, 2, payload(rev, bundle.MediaTypeRevocation), 1, add(c, "c"), nil, a), now)
	if amp.NameOf(err) != trust.ErrRotationFork {
		t.Fatalf("statement 2 whose prev is the payload of a kept revocation of the scope: %v, want rotation_fork", err)
	}
	s2 := rotation(t, 2, payload(s1, bundle.MediaTypeRotation), 1, add(c, "c"), nil, a)
	st, _, err = trust.ApplyRotation(st, s2, now)
	if err != nil {
		t.Fatalf("control: statement 2 linked by statement 1's payload: %v", err)
	}
	_, _, err = trust.ApplyRotation(st, rotation(t, 3, payload(s1, bundle.MediaTypeRotation), 1, add(seedKey(65), "d"), nil, a), now)
	if amp.NameOf(err) != trust.ErrRotationFork {
		t.Fatalf("statement 3 whose prev is the payload of statement 1 (not 2): %v, want rotation_fork", err)
	}
}
