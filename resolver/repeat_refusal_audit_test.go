package resolver

// Threat: every refused import is an import_refused entry of the audit
// log, which is chained and never trimmed; 'ampbundle sync' offers the
// same refused files again on every timer run (a statement refused is not
// recorded, so HasStatement never says it was seen). Whoever can make
// the store refuse the same bytes again and again grows the store file
// without bound: a rogue publisher whose statements are over its share, a
// mirror serving a removed bundle. The bar: a refusal identical to one
// already audited at the same store generation (same action, verdict and
// file SHA-256) is not audited again; a bounded record of recent
// refusals, so the log still says it happened, once.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// refusedEntries counts the import_refused entries of s's audit log.
func refusedEntries(t *testing.T, s *Store) int {
	t.Helper()
	a, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range a {
		if e.Action == "import_refused" {
			n++
		}
	}
	return n
}

// TestOverShareStatementOfferedAgainIsAuditedOnce: the
// example publisher, trusted for org.example, is at its statement share
// (lowered to 2); its next revocation is refused
// statement_share_exhausted (TRUST-18), and nothing is kept, so a mirror
// offers the very same file on every sync run and the store audits it
// every time (with 9,000 such statements in an index: 9,000 entries a
// run, and sync's MaxStoreRefusals does not apply, the statements being
// signed as the store requires). The generation does not move, so the
// refusals are identical. Should: audited once at a generation.
func TestOverShareStatementOfferedAgainIsAuditedOnce(t *testing.T) {
	s := newStore(t)
	lowerStatementLimits(s, 2, 100)
	example := sampleKey(t, "example-publisher")
	for i := range 2 {
		if _, err := s.ApplyRevocation(strangerRevocationOf(t, "org.example", byte(70+i), example)); err != nil {
			t.Fatal(err)
		}
	}
	over := strangerRevocationOf(t, "org.example", 80, example)
	before, gen := refusedEntries(t, s), s.Generation()
	for range 3 {
		if _, err := s.ApplyRevocation(over); amp.NameOf(err) != ErrStatementShare {
			t.Fatalf("a revocation over the share: %v, want %s", err, ErrStatementShare)
		}
	}
	if n := refusedEntries(t, s) - before; n != 1 || s.Generation() != gen {
		t.Fatalf("the same over-share revocation offered 3 times at generation %d: %d audit entries, generation now %d; want 1 and %d",
			gen, n, s.Generation(), gen)
	}
}

// TestRemovedBundleOfferedAgainIsAuditedOnce: the
// operator removed org.example.translate (version 3, the highest
// imported); any mirror still serving version 3 has it offered on every
// sync run (sync compares with installed bundles only), and each offer is
// refused (rollback) and audited. Should: the identical refusal is
// audited once at a generation.
func TestRemovedBundleOfferedAgainIsAuditedOnce(t *testing.T) {
	s := newStore(t)
	example := sampleKey(t, "example-publisher")
	v3 := cosigned(t, 3, example)
	if _, err := s.Import(context.Background(), bytes.NewReader(v3), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	before, gen := refusedEntries(t, s), s.Generation()
	for range 3 {
		if _, err := s.Import(context.Background(), bytes.NewReader(v3), ImportOptions{Source: "https://mirror.example/bundles/org.example.translate"}); err == nil {
			t.Fatal("a removed version was imported again")
		}
	}
	if n := refusedEntries(t, s) - before; n != 1 || s.Generation() != gen {
		t.Fatalf("the same refused file offered 3 times at generation %d: %d audit entries, generation now %d; want 1 and %d",
			gen, n, s.Generation(), gen)
	}
}

// TestLastingRefusalIsAuditedAgainADayLater: the record of recent
// refusals keeps a lasting refusal out of the log for a day, not for
// ever: offered again 25 hours later (store clock), the same removed
// version is audited once more, and then not again within the day; a
// clock set back audits it again rather than never.
func TestLastingRefusalIsAuditedAgainADayLater(t *testing.T) {
	clock := testNow
	s := newStore(t, func(o *Options) { o.Now = func() time.Time { return clock } })
	v3 := cosigned(t, 3, sampleKey(t, "example-publisher"))
	if _, err := s.Import(context.Background(), bytes.NewReader(v3), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(v3)
	offer := func() {
		t.Helper()
		if _, err := s.Import(context.Background(), bytes.NewReader(v3), ImportOptions{FileSHA256: sum[:]}); amp.NameOf(err) != ErrRollback {
			t.Fatalf("a removed version offered again: %v, want %s", err, ErrRollback)
		}
	}
	before := refusedEntries(t, s)
	for _, step := range []struct {
		advance time.Duration
		want    int // import_refused entries added since the start
	}{
		{0, 1}, {time.Hour, 1}, {RefusalReauditInterval - time.Hour - time.Second, 1},
		{2 * time.Hour, 2}, {time.Hour, 2}, {-48 * time.Hour, 3}, {time.Minute, 3},
	} {
		clock = clock.Add(step.advance)
		offer()
		if n := refusedEntries(t, s) - before; n != step.want {
			t.Fatalf("at %s: %d refusals audited, want %d", clock.Sub(testNow), n, step.want)
		}
	}
	if v, ok, err := s.RefusedAt(sum[:]); err != nil || !ok || v != string(ErrRollback) {
		t.Fatalf("RefusedAt = %q %v %v, want %s", v, ok, err, ErrRollback)
	}
}

// TestRefusedAtAnswersOnlyAtTheGenerationOfTheRefusal: sync skips a file
// the store refused only while nothing the store judges by changed: once
// the generation moves (here a trust change), RefusedAt says no, and the
// file refused again at the new generation is recorded (not audited again
// within the day) so that it is skipped again.
func TestRefusedAtAnswersOnlyAtTheGenerationOfTheRefusal(t *testing.T) {
	s := newStore(t)
	v3 := cosigned(t, 3, sampleKey(t, "example-publisher"))
	if _, err := s.Import(context.Background(), bytes.NewReader(v3), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(v3)
	if _, ok, _ := s.RefusedAt(sum[:]); ok {
		t.Fatal("RefusedAt says refused before any refusal")
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(v3), ImportOptions{FileSHA256: sum[:]}); err == nil {
		t.Fatal("a removed version was imported again")
	}
	if _, ok, _ := s.RefusedAt(sum[:]); !ok {
		t.Fatal("RefusedAt does not say the file was refused")
	}
	if err := s.TrustRemove("acme"); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := s.RefusedAt(sum[:]); ok {
		t.Fatal("RefusedAt still says refused after the store changed")
	}
	n := refusedEntries(t, s)
	if _, err := s.Import(context.Background(), bytes.NewReader(v3), ImportOptions{FileSHA256: sum[:]}); err == nil {
		t.Fatal("a removed version was imported again")
	}
	if _, ok, _ := s.RefusedAt(sum[:]); !ok || refusedEntries(t, s) != n {
		t.Fatalf("refused again at the new generation: RefusedAt %v, %d new entries; want true and 0", ok, refusedEntries(t, s)-n)
	}
}

// TestRefusalRecordIsBounded: a flood of distinct refused files cannot
// grow the record of recent refusals past MaxRefusalRecords: pruning
// drops the records older than a day, then the oldest.
func TestRefusalRecordIsBounded(t *testing.T) {
	s := newStore(t)
	const n = 40
	err := s.db.Update(func(tx *bolt.Tx) error {
		meta := bucket(tx, bMeta)
		for i := range n {
			sum := sha256.Sum256([]byte(fmt.Sprint(i)))
			at := testNow.Add(-time.Duration(i) * time.Hour).Unix() // i >= 24: older than a day
			if err := meta.Put(refusalKey(sum[:]), encode(refusalRecord{Verdict: "rollback", AuditedAt: at})); err != nil {
				return err
			}
		}
		left, err := pruneRefusals(meta, testNow, 10)
		if err != nil {
			return err
		}
		if left != 10 {
			t.Errorf("%d records left, want 10", left)
		}
		c := meta.Cursor()
		found := 0
		for k, v := c.Seek(refusalKey(nil)); k != nil && bytes.HasPrefix(k, refusalKey(nil)); k, v = c.Next() {
			var r refusalRecord
			if err := decode(v, &r); err != nil || testNow.Unix()-r.AuditedAt >= 10*3600 {
				t.Errorf("a record of %v kept: not among the 10 newest", testNow.Sub(time.Unix(r.AuditedAt, 0)))
			}
			found++
		}
		if found != 10 {
			t.Errorf("%d records in the bucket, want 10", found)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
