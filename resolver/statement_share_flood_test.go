package resolver

import (
	"bytes"
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/trust"
)

// lowerStatementLimits lowers the statement limits of s alone.
func lowerStatementLimits(s *Store, share, total int) {
	lowerLimits(s, func(l *storeLimits) { l.statements = trust.StatementLimits{Share: share, Total: total} })
}

// strangerRevocationOf revokes, for scope, the key of seed n (trusted by
// nobody), signed by signers: a valid statement that changes nothing but
// is kept, and listed by a mirror.
func strangerRevocationOf(t *testing.T, scope string, n byte, signers ...ed25519.PrivateKey) []byte {
	t.Helper()
	return revocation(t, scope, []string{didOfPriv(testKeyN(n))}, nil, signers...)
}

// keptStatements is how many statements s keeps.
func keptStatements(t *testing.T, s *Store) int {
	t.Helper()
	sts, err := s.Statements()
	if err != nil {
		t.Fatal(err)
	}
	return len(sts)
}

// storedValue reads the value of key in bucket b of s (nil: none).
func storedValue(t *testing.T, s *Store, b string, key []byte) []byte {
	t.Helper()
	var v []byte
	if err := s.db.View(func(tx *bolt.Tx) error {
		v = bytes.Clone(bucket(tx, b).Get(key))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return v
}

// statementChargeOf reads the statements charged to the account of k.
func statementChargeOf(t *testing.T, s *Store, k ed25519.PrivateKey) int {
	return int(getU64(storedValue(t, s, bMeta, statementChargeKey(didOfPriv(k)))))
}

// TestOneAuthorityCannotFloodTheStatementsEveryOtherAuthorityNeeds: a
// store keeps every statement it applies and a mirror lists them all, at
// most 10,000 (MIRROR-8: past it, no new snapshot, so no later
// revocation reaches any syncing site). The example publisher, trusted
// for org.example, revokes keys nobody uses, each a valid statement of its
// own scope: it must be refused statement_share_exhausted once its share
// is kept (lowered to 3 here), with nothing kept, applied or audited but
// the refusal, and acme's revocation must still apply. The same statement
// again is not charged twice.
func TestOneAuthorityCannotFloodTheStatementsEveryOtherAuthorityNeeds(t *testing.T) {
	s := newStore(t) // example (org.example), acme (com.acme)
	lowerStatementLimits(s, 3, 100)
	example, acme := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher")
	var first []byte
	for i := range 3 {
		r := strangerRevocationOf(t, "org.example", byte(60+i), example)
		if _, err := s.ApplyRevocation(r); err != nil {
			t.Fatalf("revocation %d within the share: %v", i+1, err)
		}
		if first == nil {
			first = r
		}
	}
	gen := s.Generation()
	flood := strangerRevocationOf(t, "org.example", 63, example)
	_, err := s.ApplyRevocation(flood)
	if err == nil {
		t.Fatal("an authority past its share of kept statements had one more kept: one publisher can fill the mirror index for every other")
	}
	expectName(t, err, ErrStatementShare)
	if has, _ := s.HasStatement(sha256sum(flood)); has || keptStatements(t, s) != 3 || s.Generation() != gen {
		t.Fatalf("the refused statement left a trace: kept %v, %d statements, generation %d -> %d", has, keptStatements(t, s), gen, s.Generation())
	}
	if e := lastAudit(t, s); e.Action != "import_refused" {
		t.Fatalf("last audit entry %q, want import_refused", e.Action)
	}
	if storedValue(t, s, bRevoked, revokedKeyKey(didOfPriv(testKeyN(63)))) != nil {
		t.Fatal("the refused revocation was applied")
	}
	// The same bytes again are kept already: applied (unchanged), not
	// refused, not charged.
	if res, err := s.ApplyRevocation(first); err != nil || !res.Unchanged {
		t.Fatalf("a statement kept already, applied again past the share: %+v %v", res, err)
	}
	if n := statementChargeOf(t, s, example); n != 3 {
		t.Fatalf("example charged %d statements, want 3", n)
	}
	// Another authority's revocation still applies.
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "com.acme", 70, acme)); err != nil {
		t.Fatalf("acme's revocation was refused after example's flood: %v", err)
	}
	if n := statementChargeOf(t, s, acme); n != 1 || keptStatements(t, s) != 4 {
		t.Fatalf("acme charged %d (want 1), %d kept (want 4)", n, keptStatements(t, s))
	}
}

// TestAuthorityCannotMintStatementSharesByTrustStatements: a share per
// signing key would let the example publisher add keys for its own scope
// by trust statement and have each flood a share of its own. The keys a
// statement adds descend from its signers' account (trust.Key.Origin), so
// the statement adding them and theirs are all charged to example's share.
func TestAuthorityCannotMintStatementSharesByTrustStatements(t *testing.T) {
	s := newStore(t)
	lowerStatementLimits(s, 3, 100)
	example, minted := sampleKey(t, "example-publisher"), testKeyN(80)
	if _, err := s.ApplyRotation(rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"minted": minted}, nil, example)); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if _, err := s.ApplyRevocation(strangerRevocationOf(t, "org.example", byte(81+i), minted)); err != nil {
			t.Fatalf("minted key's revocation %d: %v", i+1, err)
		}
	}
	for who, k := range map[string]ed25519.PrivateKey{"the minted key": minted, "example": example} {
		_, err := s.ApplyRevocation(strangerRevocationOf(t, "org.example", 90, k))
		if err == nil {
			t.Fatalf("%s had a statement kept past example's share: minting keys mints shares", who)
		}
		expectName(t, err, ErrStatementShare)
	}
	if n := statementChargeOf(t, s, example); n != 3 {
		t.Fatalf("example charged %d, want 3 (its trust statement and its minted key's two revocations)", n)
	}
}

// TestStoreFullOfStatementsRefusesMoreWhateverTheShares: the sum rule.
// With more authorities than MaxStatements / StatementShare, each within
// its share, the store reaches what a mirror index lists: the next
// statement is refused (statement_share_exhausted, naming the rule), not
// kept past what a mirror can serve (lowered to share 2, total 3).
func TestStoreFullOfStatementsRefusesMoreWhateverTheShares(t *testing.T) {
	s := newStore(t)
	lowerStatementLimits(s, 2, 3)
	example, acme := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher")
	for i, st := range [][]byte{
		strangerRevocationOf(t, "org.example", 60, example), strangerRevocationOf(t, "org.example", 61, example),
		strangerRevocationOf(t, "com.acme", 62, acme),
	} {
		if _, err := s.ApplyRevocation(st); err != nil {
			t.Fatalf("statement %d: %v", i+1, err)
		}
	}
	_, err := s.ApplyRevocation(strangerRevocationOf(t, "com.acme", 63, acme))
	if err == nil {
		t.Fatal("a store keeping its most statements kept one more: past what a mirror index lists")
	}
	expectName(t, err, ErrStatementShare)
	if keptStatements(t, s) != 3 {
		t.Fatalf("%d statements kept, want 3", keptStatements(t, s))
	}
}

// TestStoreKeptStatementsBeforeSharesIsCountedOnce: a store written before
// statements were charged (no counters, no marker) opens and lists its
// statements as before; the first statement applied counts the kept ones,
// each charged to the authority that signed it (here example's five, and
// one co-signed by a key nobody trusts whose did:key may sort first: the
// trusted signer is charged), once, in a transaction of its own, so that
// example, already past its share (3), is refused even that first time and
// acme is not.
func TestStoreKeptStatementsBeforeSharesIsCountedOnce(t *testing.T) {
	p := filepath.Join(t.TempDir(), "store.db")
	s, err := Open(p, Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	lowerStatementLimits(s, 100, 100)
	example, acme := sampleKey(t, "example-publisher"), sampleKey(t, "acme-publisher")
	for name, k := range map[string]ed25519.PrivateKey{"example": example, "acme": acme} {
		scope := map[string]string{"example": "org.example", "acme": "com.acme"}[name]
		if err := s.TrustAdd(name, pub(k), []string{scope}); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		if _, err := s.ApplyRevocation(strangerRevocationOf(t, "org.example", byte(60+i), example)); err != nil {
			t.Fatal(err)
		}
	}
	stranger := testKeyN(1) // untrusted co-signer
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "org.example", 64, example, stranger)); err != nil {
		t.Fatal(err)
	}
	// As a build before charges left it.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		meta, prefix := bucket(tx, bMeta), statementChargeKey("")
		var del [][]byte
		c := meta.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			del = append(del, bytes.Clone(k))
		}
		for _, k := range append(del, []byte(kStatementChargesCounted)) {
			if err := meta.Delete(k); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	s, err = Open(p, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("a store kept before statement charges does not open: %v", err)
	}
	defer s.Close()
	lowerStatementLimits(s, 3, 100)
	if n := keptStatements(t, s); n != 5 {
		t.Fatalf("%d statements listed, want 5", n)
	}
	_, err = s.ApplyRevocation(strangerRevocationOf(t, "org.example", 70, example))
	if err == nil {
		t.Fatal("an authority whose statements kept before this build pass its share had one more kept")
	}
	expectName(t, err, ErrStatementShare)
	if n, m := statementChargeOf(t, s, example), statementChargeOf(t, s, stranger); n != 5 || m != 0 {
		t.Fatalf("after counting: example charged %d (want 5), the untrusted co-signer %d (want 0)", n, m)
	}
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "com.acme", 71, acme)); err != nil {
		t.Fatalf("acme's revocation on a store counted from before: %v", err)
	}
	if n := statementChargeOf(t, s, acme); n != 1 {
		t.Fatalf("acme charged %d, want 1 (counted once, not again)", n)
	}
}
