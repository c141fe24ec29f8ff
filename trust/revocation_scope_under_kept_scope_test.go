package trust_test

import (
	"crypto/ed25519"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/trust"
)

// TestARevocationScopeUnderOneTheKeyIsRevokedForIsNotKeptAgain: a key
// revoked for org.example counts nowhere under it, so a revocation of
// org.example.a1 naming it withdraws nothing more. It was still added to
// the key's record, which every load of a store trusting the key reads
// (docs/SPEC-DECISIONS.md TRUST-33). Now a scope under one the record
// holds is not kept (the statement changes nothing), and a scope over
// some the record holds replaces them. The key is trusted for
// net.other, disjoint from all of these, so no trust is withdrawn.
func TestARevocationScopeUnderOneTheKeyIsRevokedForIsNotKeptAgain(t *testing.T) {
	example, victim := sampleKey(t, "example-publisher"), seedKey(91)
	for _, tc := range []struct {
		name      string
		had       []string // the record's scopes before
		scope     string   // the revocation's
		want      []string
		unchanged bool
	}{
		{"under a scope kept", []string{"org.example"}, "org.example.a1", []string{"org.example"}, true},
		{"the scope kept", []string{"org.example.a1"}, "org.example.a1", []string{"org.example.a1"}, true},
		{"over scopes kept", []string{"com.acme", "org.example.a1", "org.example.a2"}, "org.example", []string{"com.acme", "org.example"}, false},
		{"a sibling of a scope kept", []string{"org.example.a1"}, "org.example.a2", []string{"org.example.a1", "org.example.a2"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := state(t, map[string][]string{"example": {"org.example"}, "victim": {"net.other"}},
				map[string]ed25519.PrivateKey{"example": example, "victim": victim})
			st.RevokedKeys[did(victim)] = trust.Revocation{StatementSHA256: make([]byte, 32), At: "2026-11-01T00:00:00Z", Scopes: tc.had}
			next, res, err := trust.ApplyRevocation(st, revocation(t, tc.scope, []string{did(victim)}, example), now)
			if err != nil {
				t.Fatal(err)
			}
			got := next.RevokedKeys[did(victim)].Scopes
			if !slices.Equal(got, tc.want) || res.Unchanged != tc.unchanged {
				t.Fatalf("record %v, unchanged %v; want %v, %v", got, res.Unchanged, tc.want, tc.unchanged)
			}
			if k := next.Keys["victim"]; !slices.Equal(k.Scopes, []string{"net.other"}) {
				t.Fatalf("the victim's trust changed: %v", k.Scopes)
			}
		})
	}
}
