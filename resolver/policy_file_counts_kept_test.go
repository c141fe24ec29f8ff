package resolver

import (
	"encoding/json"
	"errors"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// TestAPolicyFileOverTheCountBoundsIsStillRefusedByTheParser: the count
// bounds of a trust policy file moved into package trust, where
// trust.ApplyPolicy checks them too (docs/SPEC-DECISIONS.md TRUST-30).
// The parser keeps its answers: a file of one key or one threshold over
// the bound is limit_exceeded and one key of one scope too many
// invalid_policy, before any key is read; a file at each bound parses.
func TestAPolicyFileOverTheCountBoundsIsStillRefusedByTheParser(t *testing.T) {
	file := func(keys, thresholds, scopes int) []byte {
		p := TrustPolicy{Format: TrustPolicyFormat, Thresholds: map[string]uint64{}}
		for i := range keys {
			k := TrustPolicyKey{Name: fmt.Sprintf("k%04d", i), Key: amp.DIDKey(pub(mintedKey(i))), Scopes: []string{"org.example"}}
			if i == 0 && scopes > 0 {
				k.Scopes = nil
				for j := range scopes {
					k.Scopes = append(k.Scopes, fmt.Sprintf("net.s%03d", j))
				}
			}
			p.Keys = append(p.Keys, k)
		}
		for i := range thresholds {
			p.Thresholds[fmt.Sprintf("org.example.t%04d", i)] = 1
		}
		data, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	for _, tc := range []struct {
		name string
		data []byte
		want amp.ErrName // "": parsed
	}{
		{"keys at the bound", file(MaxTrustPolicyKeys, 0, 0), ""},
		{"one key over the bound", file(MaxTrustPolicyKeys+1, 0, 0), bundle.ErrTooLarge},
		{"thresholds at the bound", file(0, MaxTrustPolicyThresholds, 0), ""},
		{"one threshold over the bound", file(0, MaxTrustPolicyThresholds+1, 0), bundle.ErrTooLarge},
		{"a key's scopes at the bound", file(1, 0, MaxTrustPolicyKeyScopes), ""},
		{"a key with one scope over the bound", file(1, 0, MaxTrustPolicyKeyScopes+1), ErrInvalidPolicy},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := ParseTrustPolicy(tc.data)
			if tc.want == "" {
				if err != nil || p == nil {
					t.Fatalf("a file within the bounds: %v", err)
				}
				return
			}
			if !errors.Is(err, tc.want) || p != nil {
				t.Fatalf("a file over the bounds: %v; want %s", err, tc.want)
			}
		})
	}
}
