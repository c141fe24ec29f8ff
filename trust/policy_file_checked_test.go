package trust_test

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// TestAPolicyFileTheParserWouldRefuseIsRefusedByApplyPolicy:
// trust.ApplyPolicy is the exported decision, but only its caller
// resolver.ParseTrustPolicy checked the file's form; AddKey checks its
// own (TRUST-14). Given a file the parser would refuse, ApplyPolicy
// trusted a key under a name no store record or audit entry may carry,
// a key for no scope (trusted for nothing, listed as trusted), a key for
// "org.example." or for unsorted scopes (a spelling no threshold or
// statement uses), and set a threshold of 9 or "org.example."'s, which
// no bundle of at most bundle.MaxSignatures signatures can meet
// (docs/SPEC-DECISIONS.md TRUST-29). Each is now invalid_policy, the
// parser's error name, and nothing is returned; the well-formed file is
// still applied.
func TestAPolicyFileTheParserWouldRefuseIsRefusedByApplyPolicy(t *testing.T) {
	owners := map[string]ed25519.PrivateKey{}
	scopes := map[string][]string{}
	for i := range bundle.MaxSignatures + 1 {
		n := fmt.Sprintf("k%d", i)
		owners[n], scopes[n] = numberedKey(i, 12), []string{"org.example"}
	}
	fresh := did(seedKey(0x91))
	key := func(name string, sc ...string) trust.PolicyKey {
		return trust.PolicyKey{Name: name, Key: fresh, Scopes: sc}
	}
	cases := []struct {
		name       string
		keys       []trust.PolicyKey
		thresholds map[string]uint64
		wantErr    bool
	}{
		{"well formed", []trust.PolicyKey{key("new", "com.acme", "org.example")}, map[string]uint64{"org.example": 2}, false},
		{"threshold above the signatures a bundle carries", nil, map[string]uint64{"org.example": bundle.MaxSignatures + 1}, true},
		{"threshold of zero", nil, map[string]uint64{"org.example": 0}, true},
		{"threshold scope not in stored form", nil, map[string]uint64{"org.example.": 2}, true},
		{"threshold scope not a scope", nil, map[string]uint64{"org..example": 2}, true},
		{"name with a space", []trust.PolicyKey{key("a name", "org.example")}, nil, true},
		{"empty name", []trust.PolicyKey{key("", "org.example")}, nil, true},
		{"name too long", []trust.PolicyKey{key(fmt.Sprintf("%065d", 0), "org.example")}, nil, true},
		{"no scope", []trust.PolicyKey{key("new")}, nil, true},
		{"scope not in stored form", []trust.PolicyKey{key("new", "org.example.")}, nil, true},
		{"scope not a scope", []trust.PolicyKey{key("new", "Org Example")}, nil, true},
		{"scopes unsorted", []trust.PolicyKey{key("new", "org.example", "com.acme")}, nil, true},
		{"scope twice", []trust.PolicyKey{key("new", "org.example", "org.example")}, nil, true},
		{"name twice", []trust.PolicyKey{key("new", "org.example"), {Name: "new", Key: did(seedKey(0x92)), Scopes: []string{"org.example"}}}, nil, true},
		{"key twice", []trust.PolicyKey{key("new", "org.example"), key("other", "org.example")}, nil, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := state(t, scopes, owners)
			before := len(st.Keys)
			next, res, err := trust.ApplyPolicy(st, &trust.PolicyFile{Keys: tc.keys, Thresholds: tc.thresholds}, now)
			if !tc.wantErr {
				if err != nil || len(res.Added) != 1 || next.Thresholds["org.example"] != 2 {
					t.Fatalf("a well-formed file: err %v, result %+v", err, res)
				}
				return
			}
			if !errors.Is(err, trust.ErrInvalidPolicy) || next != nil || res != nil {
				var added []string
				if res != nil {
					added = res.Added
				}
				t.Fatalf("applied a file the parser refuses: err %v, added %q; want invalid_policy and nothing returned", err, added)
			}
			if len(st.Keys) != before {
				t.Fatalf("the state given changed: %d keys, had %d", len(st.Keys), before)
			}
		})
	}
}
