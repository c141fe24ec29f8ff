package trust_test

import (
	"crypto/ed25519"
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// TestTrustStatementsWhoseKeysWouldPassTheAccountsBoundAreRefused: an
// authority's trust statements added bundle.MaxRotationKeys keys each,
// up to its share of statements: 64,000 keys from one operator-trusted
// key, which every later act loads and walks (docs/SPEC-DECISIONS.md
// TRUST-25). A statement that adds keys is now refused limit_exceeded,
// and changes nothing, when more than trust.MaxMintedKeys keys descending
// from its account would be trusted and more than before; one that
// retires as many as it adds passes, and one authority's keys never
// refuse another's.
func TestTrustStatementsWhoseKeysWouldPassTheAccountsBoundAreRefused(t *testing.T) {
	a, b := seedKey(41), seedKey(44)
	fresh := bundle.NamedKey{Name: "fresh", Key: did(seedKey(45))}
	for _, tc := range []struct {
		name    string
		minted  int // keys of a's account trusted before
		signer  ed25519.PrivateKey
		retire  []string
		refused bool
	}{
		{"the last key within the bound", trust.MaxMintedKeys - 1, a, nil, false},
		{"a key past the bound", trust.MaxMintedKeys, a, nil, true},
		{"a key past the bound, one retired with it", trust.MaxMintedKeys, a, []string{did(numberedKey(0, 7))}, false},
		{"another authority's key", trust.MaxMintedKeys, b, nil, false},
		// An account past the bound (an earlier build kept no bound) may
		// rotate one key for another, never grow.
		{"an account past the bound, one key for another", trust.MaxMintedKeys + 500, a, []string{did(numberedKey(0, 7))}, false},
		{"an account past the bound, one more key", trust.MaxMintedKeys + 500, a, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := state(t, map[string][]string{"a": {"org.example"}, "b": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a, "b": b})
			for i := range tc.minted {
				n := fmt.Sprintf("minted%04d", i)
				st.Keys[n] = trust.Key{Name: n, Key: pub(numberedKey(i, 7)), Scopes: []string{"org.example.minted"}, AddedAt: "2026-11-01T00:00:00Z", Origin: did(a)}
			}
			before := snapshot(st)
			next, _, err := trust.ApplyRotation(st, rotation(t, 1, nil, 1, []bundle.NamedKey{fresh}, tc.retire, tc.signer), now)
			unchangedInput(t, before, st)
			if tc.refused {
				if amp.NameOf(err) != bundle.ErrTooLarge {
					t.Fatalf("applied (%v); want limit_exceeded", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := next.Keys["fresh"]; !ok {
				t.Fatal("the key added is not trusted")
			}
		})
	}
}
