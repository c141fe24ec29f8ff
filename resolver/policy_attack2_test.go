package resolver

import (
	"crypto/ed25519"
	"strings"
	"testing"
)

// Second review (r13) of the trust policy file: reproductions that fail
// while the hole is open.

// TestTrustPolicyDuplicateMemberByCase: TRUST-10 says duplicate members are
// refused "so a reviewer and the store read the same document". The
// duplicate check compares member names exactly, but encoding/json matches
// them case-insensitively: a second "Thresholds" (or "KEYS") member passes
// as distinct and silently overrides (slices) or merges into (maps) what a
// reviewer reads under "thresholds".
func TestTrustPolicyDuplicateMemberByCase(t *testing.T) {
	a := testKeyN(41)
	evil := testKeyN(99)
	docs := map[string]string{
		"thresholds twice": `{"format":"ampbundle-trust-policy/1","keys":[],"thresholds":{"org.example":3},"Thresholds":{"org.example":1}}`,
		"keys twice": `{"format":"ampbundle-trust-policy/1","keys":[{"name":"a","key":"` + didOfPriv(a) + `","scopes":["org.example"]}],` +
			`"KEYS":[{"name":"a","key":"` + didOfPriv(evil) + `","scopes":["*"]}],"thresholds":{}}`,
		"member of a key twice": `{"format":"ampbundle-trust-policy/1","keys":[{"name":"a","key":"` + didOfPriv(a) + `","scopes":["org.example"],"Scopes":["*"]}],"thresholds":{}}`,
	}
	for name, doc := range docs {
		p, err := ParseTrustPolicy([]byte(doc))
		if err == nil {
			t.Errorf("%s: accepted; the store reads %+v", name, *p)
		}
	}
}

// TestStaleTrustPolicyReAddsRetiredKeyAndLowersRotatedThreshold:
// TRUST-10 says "a stale copy cannot silently undo a rotation". A trust
// statement retires key a and raises the scope's threshold to 2; applying
// the operator's older policy file (a for org.example, threshold 1)
// trusts the retired key again and lowers the threshold back to 1.
func TestStaleTrustPolicyReAddsRetiredKeyAndLowersRotatedThreshold(t *testing.T) {
	s := rotationStore(t) // a (seed 41) trusted for org.example
	a, b, c := testKeyN(41), testKeyN(42), testKeyN(43)
	if _, err := s.ApplyRotation(rotation(t, nil, 1, 2, map[string]ed25519.PrivateKey{"b": b, "c": c}, []ed25519.PrivateKey{a}, a)); err != nil {
		t.Fatal(err)
	}
	stale := []byte(`{"format":"ampbundle-trust-policy/1","keys":[{"name":"a","key":"` + didOfPriv(a) +
		`","scopes":["org.example"]}],"thresholds":{"org.example":1}}`)
	p, err := ParseTrustPolicy(stale)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.ApplyTrustPolicy(p)
	th, _ := s.TrustThresholds()
	keys, _ := s.TrustList()
	readded := false
	for _, k := range keys {
		readded = readded || k.Name == "a"
	}
	if err == nil || readded || th["org.example"] != 2 {
		t.Fatalf("stale policy undid the rotation: err=%v result=%+v retired key trusted again=%v thresholds=%v", err, res, readded, th)
	}
}

// TestStalePolicyEachRuleAlone: each half of the rule that keeps an older
// policy file from undoing a rotation holds on its own (the reviewer's file
// breaks both at once), and neither refuses what is not stale: a retired
// key trusted for a scope the retiring chain does not overlap, a key a
// later statement of the chain added again (but not one the operator
// then removed with trust rm), a threshold raised or kept. Refusals
// change nothing.
func TestStalePolicyEachRuleAlone(t *testing.T) {
	a, b, c := testKeyN(41), testKeyN(42), testKeyN(43)
	doc := func(keys string, th string) []byte {
		return []byte(`{"format":"ampbundle-trust-policy/1","keys":[` + keys + `],"thresholds":{` + th + `}}`)
	}
	keyA := func(scope string) string {
		return `{"name":"a","key":"` + didOfPriv(a) + `","scopes":["` + scope + `"]}`
	}
	tests := []struct {
		name   string
		readd  bool // a second statement adds a again (as a2), then trust rm a2
		policy []byte
		want   string // "" accepted; else in the error
	}{
		{"retired key only, threshold kept", false, doc(keyA("org.example"), `"org.example":2`), "retired"},
		{"retired key for a scope under the chain's", false, doc(keyA("org.example.bank"), ``), "retired"},
		{"retired key for a containing scope", false, doc(keyA("*"), ``), "retired"},
		{"threshold lowered only", false, doc(``, `"org.example":1`), "never lowers"},
		{"threshold raised", false, doc(``, `"org.example":3`), "only 2 trusted key(s)"}, // b, c: refused as unreachable, not as stale
		{"threshold kept", false, doc(``, `"org.example":2`), ""},
		{"retired key for a disjoint scope", false, doc(keyA("com.acme"), ``), ""},
		// A later statement lifts the retirement, but the operator's trust
		// rm since is a removal of its own that a file never undoes
		// (TRUST-12): trust add is the explicit step.
		{"key added again by a later statement, then removed by trust rm", true, doc(keyA("org.example"), `"org.example":2`), "trust rm a2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := rotationStore(t)
			r1 := rotation(t, nil, 1, 2, map[string]ed25519.PrivateKey{"b": b, "c": c}, []ed25519.PrivateKey{a}, a)
			if _, err := s.ApplyRotation(r1); err != nil {
				t.Fatal(err)
			}
			if tt.readd {
				if _, err := s.ApplyRotation(rotation(t, r1, 2, 2, map[string]ed25519.PrivateKey{"a2": a}, nil, b, c)); err != nil {
					t.Fatal(err)
				}
				if err := s.TrustRemove("a2"); err != nil {
					t.Fatal(err)
				}
			}
			gen := s.Generation()
			p, err := ParseTrustPolicy(tt.policy)
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.ApplyTrustPolicy(p)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("got %v, want an error with %q", err, tt.want)
			}
			th, _ := s.TrustThresholds()
			keys, _ := s.TrustList()
			if s.Generation() != gen || th["org.example"] != 2 || len(keys) != 2 {
				t.Fatalf("a refused policy changed the store: thresholds %v, %d keys", th, len(keys))
			}
		})
	}
}
