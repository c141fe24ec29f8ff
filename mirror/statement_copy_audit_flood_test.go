package mirror

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestCopiesOfAKeptRevocationAreNotAuditedOnEveryRun (review 16): a
// hostile mirror, with no key, takes a revocation R that the syncing site
// keeps and lists copies of it, each co-signed by a throwaway key
// (bundle.CosignStatement): up to MaxIndexStatements entries, each another
// file SHA-256. Each copy is R (TRUST-19), answered unchanged — and each
// wrote a revoke/unchanged audit entry, at every run, under the store's
// write lock: the audit flood MIRROR-11 closed for refused files,
// reopened for copies. A copy of a kept statement that changes nothing
// writes no audit entry; the store records the copies it answered
// (MIRROR-13), so only the first run writes anything, and no later run
// downloads a copy again.
func TestCopiesOfAKeptRevocationAreNotAuditedOnEveryRun(t *testing.T) {
	const copies = 12
	p := newStore(t)
	r := strangerRevocation(t, 77)
	applyStatements(t, p, r)

	m := newRepeatMirror(t)
	for i := range copies {
		seed := make([]byte, ed25519.SeedSize)
		binary.BigEndian.PutUint64(seed, uint64(i)+1<<40)
		cp, err := bundle.CosignStatement(r, ed25519.NewKeyFromSeed(seed))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Equal(cp, r) {
			t.Fatal("test setup: the copy is R itself")
		}
		m.statement(cp)
	}
	ts := httptest.NewServer(m)
	defer ts.Close()

	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n, err := s.Statements(); err != nil || len(n) != 1 {
		t.Fatalf("test setup: %d statements kept (%v), want R alone", len(n), err)
	}
	runs := repeatSync(t, s, ts.URL, 3, &m.fetches)
	if n, _ := s.Statements(); len(n) != 1 {
		t.Fatalf("%d statements kept after the copies, want R alone", len(n))
	}
	for i, r := range runs {
		// Run 1 may write the store's record of the copies it answered
		// (resolver.StatementCopy, bounded by resolver.MaxRefusalRecords:
		// MIRROR-13), so that later runs do not download them again;
		// no run audits anything, and later runs write nothing.
		if r.entries != 0 || r.genMoved || i > 0 && (r.fileGrowth != 0 || r.fetches != 0) {
			t.Errorf("run %d over %d copies of a kept revocation: %s (want no audit entry and nothing written: a timer sync every few minutes grows the chained, never-trimmed audit log without bound)",
				i+1, copies, r)
		}
	}
}
