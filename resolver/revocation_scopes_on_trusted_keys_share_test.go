package resolver

import (
	"crypto/ed25519"
	"fmt"
	"testing"
)

// revokedScopesKept counts the scopes, and their bytes, of the revocation
// records of keys the store trusts: what every load of its trust state
// reads (loadRevokedKeys).
func revokedScopesKept(t *testing.T, s *Store) (scopes, size int) {
	t.Helper()
	st, err := s.readState(selTrust)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range st.Keys {
		for _, sc := range st.RevokedKeys[k.DID()].Scopes {
			scopes++
			size += len(sc)
		}
	}
	return scopes, size
}

// TestSiblingScopeRevocationsOfKeysTrustedElsewhereSpendOnlyTheirAuthoritysShare:
// a revocation of scope S naming a key trusted only for disjoint scopes
// takes away none of its trust but adds S to its record, which every load
// reads (docs/SPEC-DECISIONS.md TRUST-33). The example publisher revokes
// three keys the operator trusts for com.acme.victims for the sibling
// scopes org.example.a1 to a4: 12 scopes kept on trusted keys, and with
// 984 scopes and 1,000 keys about 10^6. Each lengthened record now costs
// the example publisher one kept statement of its share (lowered to 6):
// the first two statements are applied (6), the third and fourth are
// refused statement_share_exhausted with nothing written, and acme's own
// revocation of the same keys, which withdraws their trust, still
// applies, charged once to acme.
func TestSiblingScopeRevocationsOfKeysTrustedElsewhereSpendOnlyTheirAuthoritysShare(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	lowerStatementLimits(s, 6, 100)
	example, acme := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher")
	var victims []string
	for i := range 3 {
		k := testKeyN(byte(100 + i))
		if err := s.TrustAdd(fmt.Sprintf("victim%d", i), pub(k), []string{"com.acme.victims"}); err != nil {
			t.Fatal(err)
		}
		victims = append(victims, didOfPriv(k))
	}
	for i, want := range []bool{true, true, false, false} {
		_, err := s.ApplyRevocation(revocation(t, fmt.Sprintf("org.example.a%d", i+1), victims, nil, example))
		n, size := revokedScopesKept(t, s)
		t.Logf("after statement %d: %d scopes (%d bytes) kept on trusted keys", i+1, n, size)
		if want {
			if err != nil {
				t.Fatalf("statement %d within the share: %v", i+1, err)
			}
			continue
		}
		if err == nil {
			t.Fatalf("statement %d applied: one authority grows the revocations of other tenants' trusted keys without bound (%d scopes kept)", i+1, n)
		}
		expectName(t, err, ErrStatementShare)
		if n != 6 || keptStatements(t, s) != 2 {
			t.Fatalf("the refused statement left a trace: %d scopes on trusted keys (want 6), %d statements kept (want 2)", n, keptStatements(t, s))
		}
	}
	if n := statementChargeOf(t, s, example); n != 6 {
		t.Fatalf("example charged %d, want 6 (two statements lengthening three trusted keys' records each)", n)
	}
	res, err := s.ApplyRevocation(revocation(t, "com.acme", victims, nil, acme))
	if err != nil {
		t.Fatalf("acme's revocation of its own keys after example's flood: %v", err)
	}
	if len(res.RemovedTrust) != 3 || statementChargeOf(t, s, acme) != 1 {
		t.Fatalf("acme removed %v (want 3 keys), charged %d (want 1)", res.RemovedTrust, statementChargeOf(t, s, acme))
	}
}

// TestKeysRevokedForManyScopesChargeTheTrustStatementThatTrustsThem: a
// revocation of a key nobody trusts is looked up, never loaded, so it
// costs one statement however many keys it names; a trust statement that
// then trusts the key makes every load read its record. Unpriced, an
// authority revoked its future keys for hundreds of sibling scopes and
// then minted them (docs/SPEC-DECISIONS.md TRUST-33). Here acme revokes
// a key for four of its scopes; the example publisher, which has spent
// one of its share of four, is refused statement_share_exhausted the
// statement trusting it (charged four), with nothing trusted, and still
// trusts a fresh key (charged one).
func TestKeysRevokedForManyScopesChargeTheTrustStatementThatTrustsThem(t *testing.T) {
	s := newStore(t)
	lowerStatementLimits(s, 4, 100)
	example, acme := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher")
	loaded, fresh := testKeyN(110), testKeyN(111)
	for i := range 4 {
		if _, err := s.ApplyRevocation(revocation(t, fmt.Sprintf("com.acme.a%d", i+1), []string{didOfPriv(loaded)}, nil, acme)); err != nil {
			t.Fatalf("acme's revocation %d of a key nobody trusts: %v", i+1, err)
		}
	}
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "org.example", 112, example)); err != nil {
		t.Fatal(err)
	}
	_, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"loaded": loaded}, nil, example))
	if err == nil {
		t.Fatal("a trust statement trusted a key revoked for four scopes as one statement: revoked first, minted after, its records escape the share")
	}
	expectName(t, err, ErrStatementShare)
	if n, _ := revokedScopesKept(t, s); n != 0 || statementChargeOf(t, s, example) != 1 {
		t.Fatalf("the refused statement left a trace: %d scopes on trusted keys, example charged %d (want 1)", n, statementChargeOf(t, s, example))
	}
	if _, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"fresh": fresh}, nil, example)); err != nil {
		t.Fatalf("a trust statement adding a key with no revocation: %v", err)
	}
	if n := statementChargeOf(t, s, example); n != 2 {
		t.Fatalf("example charged %d, want 2", n)
	}
}
