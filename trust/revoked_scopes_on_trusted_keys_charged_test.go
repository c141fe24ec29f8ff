package trust_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// TestRevocationScopesKeptOnTrustedKeysAreChargedToTheirAuthority: each
// record of a key that stays trusted which a revocation lengthens without
// withdrawing any of the key's trust is read by every load of the store,
// and is charged as one kept statement of the signers' share
// (Effects.StatementCharge, docs/SPEC-DECISIONS.md TRUST-33). What
// withdraws trust, what is looked up rather than loaded (a key nobody
// trusts), and what adds nothing cost the statement's one. The example
// publisher (org.example) signs each revocation; "elsewhere" are two keys
// trusted for net.other, "own" a key trusted for org.example.a1 and
// net.other.
func TestRevocationScopesKeptOnTrustedKeysAreChargedToTheirAuthority(t *testing.T) {
	example, e1, e2, own, stranger := sampleKey(t, "example-publisher"), seedKey(92), seedKey(93), seedKey(94), seedKey(95)
	for _, tc := range []struct {
		name   string
		scope  string
		keys   []ed25519.PrivateKey
		had    []string // the scopes e1's record holds before
		charge int
	}{
		{"two keys trusted elsewhere", "org.example.a1", []ed25519.PrivateKey{e1, e2}, nil, 2},
		{"a record lengthened", "org.example.a2", []ed25519.PrivateKey{e1}, []string{"org.example.a1"}, 1},
		{"a scope under one kept", "org.example.a1", []ed25519.PrivateKey{e1}, []string{"org.example"}, 1},
		{"a key nobody trusts", "org.example.a1", []ed25519.PrivateKey{stranger}, nil, 1},
		{"a key narrowed", "org.example.a1", []ed25519.PrivateKey{own}, nil, 1},
		{"narrowed and two elsewhere", "org.example.a1", []ed25519.PrivateKey{own, e1, e2}, nil, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := state(t, map[string][]string{"example": {"org.example"}, "e1": {"net.other"}, "e2": {"net.other"}, "own": {"net.other", "org.example.a1"}},
				map[string]ed25519.PrivateKey{"example": example, "e1": e1, "e2": e2, "own": own})
			if tc.had != nil {
				st.RevokedKeys[did(e1)] = trust.Revocation{At: "2026-11-01T00:00:00Z", Scopes: tc.had}
			}
			var dids []string
			for _, k := range tc.keys {
				dids = append(dids, did(k))
			}
			_, res, err := trust.ApplyRevocation(st, revocation(t, tc.scope, dids, example), now)
			if err != nil {
				t.Fatal(err)
			}
			if res.StatementCharge != tc.charge {
				t.Fatalf("charged as %d statements, want %d", res.StatementCharge, tc.charge)
			}
		})
	}
	// A trust statement trusting a key whose revocation holds two scopes
	// is charged two: every load reads them from now on.
	st := state(t, map[string][]string{"example": {"org.example"}}, map[string]ed25519.PrivateKey{"example": example})
	st.RevokedKeys[did(stranger)] = trust.Revocation{At: "2026-11-01T00:00:00Z", Scopes: []string{"com.acme.a1", "com.acme.a2"}}
	_, rot, err := trust.ApplyRotation(st, rotation(t, 1, nil, 1, []bundle.NamedKey{{Name: "new", Key: did(stranger)}}, nil, example), now)
	if err != nil || rot.StatementCharge != 2 {
		t.Fatalf("trust statement trusting a key revoked for two scopes: charged %v, %v; want 2", rot, err)
	}
}

// TestAStatementChargedAsManyNeedsRoomForAllOfThem: ChargeStatementAs
// takes the least account of the signers with room for every unit, and
// refuses statement_share_exhausted one no account has room for; one
// account's charges never spend another's share.
func TestAStatementChargedAsManyNeedsRoomForAllOfThem(t *testing.T) {
	lim := trust.StatementLimits{Share: 4, Total: 100}
	for _, tc := range []struct {
		name     string
		accounts []string
		charged  map[string]int
		units    int
		want     string // "": refused
	}{
		{"room for all", []string{"a"}, map[string]int{"a": 1}, 3, "a"},
		{"room for fewer", []string{"a"}, map[string]int{"a": 2}, 3, ""},
		{"more than a share", []string{"a"}, nil, 5, ""},
		{"co-signed: the least with room for all", []string{"a", "b"}, map[string]int{"a": 2, "b": 1}, 3, "b"},
		{"none is one", []string{"a"}, map[string]int{"a": 3}, 0, "a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := trust.ChargeStatementAs(tc.accounts, tc.charged, 0, tc.units, lim)
			if tc.want == "" {
				if err == nil || amp.NameOf(err) != trust.ErrStatementShare {
					t.Fatalf("charged %q, %v; want statement_share_exhausted", got, err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("charged %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}
