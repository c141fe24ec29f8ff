package trust_test

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// TestAPolicyFileOverTheCountBoundsIsRefusedByApplyPolicy: how many keys
// and thresholds a trust policy file lists, and scopes a key has, were
// bounded by resolver.ParseTrustPolicy alone, so an embedder calling
// trust.ApplyPolicy directly got no bound, and each listed key is looked
// up with a pass over every trusted key (policyKey) and each threshold
// with another (covering): keys listed × keys trusted, without a bound
// on either factor (docs/SPEC-DECISIONS.md TRUST-30). ApplyPolicy now
// refuses a file over trust.MaxPolicyKeys keys or
// trust.MaxPolicyThresholds thresholds limit_exceeded, and a key of more
// than trust.MaxPolicyKeyScopes scopes invalid_policy, as the parser
// does, before anything is looked up, with nothing returned and the
// state given unchanged; a file at each bound is applied.
func TestAPolicyFileOverTheCountBoundsIsRefusedByApplyPolicy(t *testing.T) {
	owner := seedKey(0x93)
	keys := func(n int) []trust.PolicyKey {
		out := make([]trust.PolicyKey, n)
		for i := range out {
			out[i] = trust.PolicyKey{Name: fmt.Sprintf("listed%04d", i), Key: did(numberedKey(i, 13)), Scopes: []string{"net.other"}}
		}
		return out
	}
	thresholds := func(n int) map[string]uint64 {
		out := make(map[string]uint64, n)
		for i := range n {
			out[fmt.Sprintf("org.example.t%04d", i)] = 1 // the default: reachable, changes nothing
		}
		return out
	}
	scoped := func(n int) []trust.PolicyKey {
		k := trust.PolicyKey{Name: "wide", Key: did(seedKey(0x94))}
		for i := range n {
			k.Scopes = append(k.Scopes, fmt.Sprintf("net.s%03d", i))
		}
		return []trust.PolicyKey{k}
	}
	cases := []struct {
		name       string
		keys       []trust.PolicyKey
		thresholds map[string]uint64
		want       amp.ErrName // "": applied
	}{
		{"keys at the bound", keys(trust.MaxPolicyKeys), nil, ""},
		{"one key over the bound", keys(trust.MaxPolicyKeys + 1), nil, bundle.ErrTooLarge},
		{"thresholds at the bound", nil, thresholds(trust.MaxPolicyThresholds), ""},
		{"one threshold over the bound", nil, thresholds(trust.MaxPolicyThresholds + 1), bundle.ErrTooLarge},
		{"a key's scopes at the bound", scoped(trust.MaxPolicyKeyScopes), nil, ""},
		{"a key with one scope over the bound", scoped(trust.MaxPolicyKeyScopes + 1), nil, trust.ErrInvalidPolicy},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			st := state(t, map[string][]string{"owner": {"org.example"}}, map[string]ed25519.PrivateKey{"owner": owner})
			before := snapshot(st)
			next, res, err := trust.ApplyPolicy(st, &trust.PolicyFile{Keys: tc.keys, Thresholds: tc.thresholds}, now)
			unchangedInput(t, before, st)
			if tc.want == "" {
				if err != nil || len(res.Added) != len(tc.keys) {
					t.Fatalf("a file within the bounds: err %v; want it applied", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || next != nil || res != nil {
				t.Fatalf("a file over the bounds: err %v, state returned %v; want %s and nothing returned", err, next != nil, tc.want)
			}
		})
	}
}
