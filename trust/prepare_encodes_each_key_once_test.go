package trust_test

import (
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/trust"
)

// preparedAllocsPerKey returns the allocations one more trusted key adds
// to trust.Prepare: the difference between states of n and 2n keys, per
// key. With cached, the state carries each key's did:key (State.KeyDIDs),
// as a store loads it.
func preparedAllocsPerKey(t *testing.T, n int, cached bool) float64 {
	t.Helper()
	measure := func(keys int) float64 {
		st := (&trust.State{}).Clone()
		if cached {
			st.KeyDIDs = map[string]string{}
		}
		for i := range keys {
			name, k := fmt.Sprintf("minted%04d", i), pub(numberedKey(i, 11))
			st.Keys[name] = trust.Key{Name: name, Key: k, Scopes: []string{"org.example"}, AddedAt: "2026-11-01T00:00:00Z"}
			if cached {
				st.KeyDIDs[string(k)] = amp.DIDKey(k)
			}
		}
		return testing.AllocsPerRun(5, func() { trust.Prepare(st) })
	}
	one, two := measure(n), measure(2*n)
	return (two - one) / float64(n)
}

// TestPreparingAStateDoesNotEncodeEachKeysDIDTwice: a store prepares its
// trust state once per listing, catalog and kept-heartbeat listing
// (trust.Prepare, docs/SPEC-DECISIONS.md SCALE-24), and an authority's
// statements may keep 1,000 keys of its account trusted (TRUST-25).
// Prepare built the policy (State.Policy, which reads each key's did:key
// from State.KeyDIDs, or encodes it) and then encoded every key's
// did:key once more, 6 allocations each (docs/SPEC-DECISIONS.md
// TRUST-31). The allocations one more trusted key adds are counted, not
// the time: with the did:keys loaded, at most 3 (6 before, 0 now);
// without them, where the policy encodes each key itself, at most 9 (12
// before, 6 now).
func TestPreparingAStateDoesNotEncodeEachKeysDIDTwice(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cached bool
		limit  float64
	}{
		{"did:keys loaded with the state", true, 3},
		{"did:keys not loaded", false, 9},
	} {
		t.Run(tc.name, func(t *testing.T) {
			per := preparedAllocsPerKey(t, 200, tc.cached)
			t.Logf("%.1f allocations per trusted key", per)
			if per > tc.limit {
				t.Fatalf("one more trusted key costs %.1f allocations to prepare the state; want at most %.0f: its did:key is encoded again after the policy read it", per, tc.limit)
			}
		})
	}
}
