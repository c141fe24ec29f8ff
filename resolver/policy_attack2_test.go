package resolver

import (
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
