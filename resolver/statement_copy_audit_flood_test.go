package resolver

import (
	"testing"
)

// auditLen is the number of entries in s's audit log.
func auditLen(t *testing.T, s *Store) int {
	t.Helper()
	es, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	return len(es)
}

// TestCopiesOfAKeptStatementWriteNoAuditEntry (review 16): anyone makes
// any number of files of acme's revocation R (a signature by a throwaway
// key added: bundle.CosignStatement), and a mirror lists up to 10,000 of
// them. Each is R (TRUST-19): unchanged, not kept, not charged — but each
// wrote a revoke/unchanged audit entry, at every offer, so a peer grew the
// chained, never-trimmed log at will. A copy of a kept statement that
// changes nothing writes no entry (R's own application was audited). The
// file kept, applied again, is still audited (an operator's import), and
// a statement that changes something always is.
func TestCopiesOfAKeptStatementWriteNoAuditEntry(t *testing.T) {
	s := newStore(t)
	acme := sampleKey(t, "acme-publisher")
	r := strangerRevocationOf(t, "com.acme", 84, acme)
	if _, err := s.ApplyRevocation(r); err != nil {
		t.Fatal(err)
	}
	n := auditLen(t, s)
	for i := range 5 {
		res, err := s.ApplyRevocation(cosignedByNobody(t, r, byte(230+i)))
		if err != nil || !res.Unchanged {
			t.Fatalf("copy %d of R: %+v %v, want unchanged", i+1, res, err)
		}
	}
	if got := auditLen(t, s); got != n {
		t.Fatalf("5 copies of a kept revocation wrote %d audit entries, want none", got-n)
	}
	if _, err := s.ApplyRevocation(r); err != nil {
		t.Fatal(err)
	}
	if got := auditLen(t, s); got != n+1 {
		t.Fatalf("R itself applied again wrote %d audit entries, want 1", got-n)
	}
	if _, err := s.ApplyRevocation(strangerRevocationOf(t, "com.acme", 85, acme)); err != nil {
		t.Fatal(err)
	}
	if got := auditLen(t, s); got != n+2 {
		t.Fatalf("a new revocation wrote %d audit entries, want 1", got-n-1)
	}
}
