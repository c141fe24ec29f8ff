package trust_test

import (
	"crypto/ed25519"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/trust"
)

// TestOneAuthorityCannotTakeAnotherAuthoritysStatementShare: the charge
// of a statement the store does not keep yet (docs/SPEC-DECISIONS.md
// TRUST-18). A statement goes to the least of its signers' accounts with
// room; it is refused statement_share_exhausted when every one of them has
// had its share (an authority at its share cannot spend another's unless
// that one co-signs), and when the store keeps its total already, whatever
// the shares (the sum rule).
func TestOneAuthorityCannotTakeAnotherAuthoritysStatementShare(t *testing.T) {
	lim := trust.StatementLimits{Share: 2, Total: 10}
	for _, tc := range []struct {
		name     string
		accounts []string
		charged  map[string]int
		kept     int
		want     string // "" : refused
	}{
		{"first statement", []string{"a"}, nil, 0, "a"},
		{"within the share", []string{"a"}, map[string]int{"a": 1}, 1, "a"},
		{"at the share", []string{"a"}, map[string]int{"a": 2, "b": 0}, 2, ""},
		{"past the share (counted from before)", []string{"a"}, map[string]int{"a": 7}, 7, ""},
		{"another account's room is not taken", []string{"b"}, map[string]int{"a": 2}, 2, "b"},
		{"co-signed: the least with room", []string{"a", "b", "c"}, map[string]int{"a": 2}, 2, "b"},
		{"co-signed: every one at its share", []string{"a", "b"}, map[string]int{"a": 2, "b": 2}, 4, ""},
		{"the store keeps its total", []string{"c"}, map[string]int{"a": 2, "b": 2}, 10, ""},
		{"no signer", nil, nil, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := trust.ChargeStatement(tc.accounts, tc.charged, tc.kept, lim)
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

// TestDefaultStatementSharesFitTheMirrorIndex: one authority cannot reach
// what a mirror index lists, and the store never keeps more than it.
func TestDefaultStatementSharesFitTheMirrorIndex(t *testing.T) {
	if trust.StatementShare >= trust.MaxStatements || trust.MaxStatements/trust.StatementShare < 2 {
		t.Fatalf("share %d of %d: one authority fills the store", trust.StatementShare, trust.MaxStatements)
	}
	if d := trust.DefaultStatementLimits; d.Share != trust.StatementShare || d.Total != trust.MaxStatements {
		t.Fatalf("default limits %+v", d)
	}
}

// TestStatementAndItsMintedKeysChargeTheSignersAuthority: a trust
// statement names, as the accounts it may be charged to, its signers'
// accounts, and the keys it adds descend from the least of them: the
// statements they sign later name that same account, so minting keys
// mints no share. A revocation names its signers' accounts too.
func TestStatementAndItsMintedKeysChargeTheSignersAuthority(t *testing.T) {
	a, minted := seedKey(41), seedKey(42)
	st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
	next, res, err := trust.ApplyRotation(st, rotation(t, 1, nil, 1, []bundle.NamedKey{{Name: "minted", Key: did(minted)}}, nil, a), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.StatementAccounts) != 1 || res.StatementAccounts[0] != did(a) {
		t.Fatalf("trust statement accounts %v, want [%s]", res.StatementAccounts, did(a))
	}
	_, rev, err := trust.ApplyRevocation(next, revocation(t, "org.example", []string{did(seedKey(43))}, minted), now)
	if err != nil {
		t.Fatal(err)
	}
	if len(rev.StatementAccounts) != 1 || rev.StatementAccounts[0] != did(a) {
		t.Fatalf("the minted key's revocation names accounts %v, want [%s] (its origin)", rev.StatementAccounts, did(a))
	}
}

// TestStatementKeptBeforeChargesGoesToItsTrustedSigner: a statement kept
// before charges were recorded is charged, once, to the least account of
// the keys the store trusts that signed it, never to an untrusted
// co-signer whose did:key sorts first; with no trusted signer, to the
// least key whose signature verifies; not a statement, to none.
func TestStatementKeptBeforeChargesGoesToItsTrustedSigner(t *testing.T) {
	a, x, y := seedKey(41), seedKey(1), seedKey(2)
	st := state(t, map[string][]string{"a": {"org.example"}}, map[string]ed25519.PrivateKey{"a": a})
	p := st.Policy()
	least := did(x)
	if did(y) < least {
		least = did(y)
	}
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"trusted signer, untrusted co-signers", revocation(t, "org.example", []string{did(seedKey(43))}, a, x, y), did(a)},
		{"no trusted signer", revocation(t, "org.example", []string{did(seedKey(43))}, x, y), least},
		{"a heartbeat is no kept statement", heartbeat(t, 1, "2026-11-22T00:00:00Z", a), ""},
		{"not a signed object", []byte("junk"), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := st.KeptStatementAccount(p, tc.data); got != tc.want {
				t.Fatalf("charged to %q, want %q", got, tc.want)
			}
		})
	}
}
