package resolver

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestStatementKeptByARolledBackBuildIsIndexedBeforeItsCopiesAreCharged
// (review 16): the identity index ('p' keys, TRUST-19) came within schema
// version 3, with no bump, so a development build of version 3 from
// before it still opens a store this build indexed (TSTATE-5 plans for
// binaries rolled back and forward). Such a build keeps acme's revocation
// R2 by its file only and leaves the markers as they were. Back on this
// build, nothing was counted again: the first copy of R2 co-signed by a
// throwaway key was kept and charged to acme a second time. The marker
// holds the statement sequence indexed up to: a store whose statements
// go past it is counted and indexed again, once, and the copies are R2.
func TestStatementKeptByARolledBackBuildIsIndexedBeforeItsCopiesAreCharged(t *testing.T) {
	s := newStore(t)
	lowerStatementLimits(s, 10, 100)
	acme := sampleKey(t, "acme-publisher")
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "com.acme", 82, acme)); err != nil {
		t.Fatal(err)
	}
	// The rolled-back build applies R2: kept by its bytes, charged, no
	// identity key, the markers left as they were.
	r2 := strangerRevocationOf(t, "com.acme", 83, acme)
	if err := s.db.Update(func(tx *bolt.Tx) error {
		if err := recordStatement(tx, r2, sha256sum(r2), nil); err != nil {
			return err
		}
		return bucket(tx, bMeta).Put(statementChargeKey(didOfPriv(acme)), u64(2))
	}); err != nil {
		t.Fatal(err)
	}
	before, charged := keptStatements(t, s), statementChargeOf(t, s, acme)
	for i := range 3 {
		if _, err := s.ApplyRevocation(cosignedByNobody(t, r2, byte(243+i))); err != nil {
			t.Fatal(err)
		}
	}
	if n, c := keptStatements(t, s), statementChargeOf(t, s, acme); n != before || c != charged {
		t.Fatalf("after 3 copies of R2 (kept by a rolled-back build), %d statements kept (was %d) and acme charged %d (was %d): "+
			"a copy of a payload the store keeps was kept and charged again", n, before, c, charged)
	}
	// Indexed again, the store moves the marker with what it keeps: the
	// next statement is not counted again.
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "com.acme", 86, acme)); err != nil {
		t.Fatal(err)
	}
	if err := s.db.View(func(tx *bolt.Tx) error {
		if !statementsIndexed(bucket(tx, bMeta), bucket(tx, bStatements)) {
			t.Error("the index marker was left behind the statements this build kept")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if c := statementChargeOf(t, s, acme); c != charged+1 {
		t.Errorf("acme charged %d after its third revocation, want %d", c, charged+1)
	}
}
