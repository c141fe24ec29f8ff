package resolver

import (
	"fmt"
	"math"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestAnAuditSequenceBehindTheLogIsRefusedNotWrittenOver: TSTATE-6 made an
// audit sequence of the wrong size store_io, but one that is missing (a
// deleted meta key), rolled back (8 bytes, smaller than the log's last
// entry) or at its largest value was still trusted: the next act wrote its
// entry under that number plus one, over an entry already in the log (or,
// wrapped to 0, before the first), and was reported as done. Each act is
// now refused store_io before anything is written: the log keeps every
// entry, and check reports the mismatch.
func TestAnAuditSequenceBehindTheLogIsRefusedNotWrittenOver(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  []byte // nil: the key deleted
	}{
		{"missing", nil},
		{"zero", u64(0)},
		{"rolled back to 1", u64(1)},
		{"at its largest value", u64(math.MaxUint64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := storeAt(t)
			defer s.Close()
			before, err := s.Audit()
			if err != nil || len(before) < 2 {
				t.Fatalf("precondition: a store with an audit log: %d %v", len(before), err)
			}
			if err := s.db.Update(func(tx *bolt.Tx) error {
				if tc.seq == nil {
					return bucket(tx, bMeta).Delete([]byte(kAuditSeq))
				}
				return bucket(tx, bMeta).Put([]byte(kAuditSeq), tc.seq)
			}); err != nil {
				t.Fatal(err)
			}
			expectName(t, s.TrustAdd("late", pub(testKeyN(97)), []string{"org.late"}), ErrStoreIO)
			_, err = importBytes(t, s, variant(t, 1, nil), ImportOptions{})
			expectName(t, err, ErrStoreIO)
			after, err := s.Audit()
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(after) != fmt.Sprint(before) {
				t.Fatalf("audit_seq %s: the acts changed the log:\nbefore %v\nafter  %v", tc.name, before, after)
			}
			keys, err := s.TrustList()
			if err != nil {
				t.Fatal(err)
			}
			for _, k := range keys {
				if k.Name == "late" {
					t.Fatal("the trust change took effect though its audit entry could not be appended")
				}
			}
			ps, err := s.Check()
			if err != nil {
				t.Fatal(err)
			}
			audit := false
			for _, p := range ps {
				audit = audit || p.Kind == "audit"
			}
			if !audit {
				t.Fatalf("check does not report the audit sequence %s: %v", tc.name, ps)
			}
		})
	}
}

// TestAnAuditSequenceThatOverwritesNothingStillAppends: the guard above
// refuses only an append that would write over an entry; a log that lost
// its last entries (a gap, which check reports and no append writes over)
// keeps its audit trail going.
func TestAnAuditSequenceThatOverwritesNothingStillAppends(t *testing.T) {
	s := storeAt(t)
	defer s.Close()
	if err := s.TrustAdd("late", pub(testKeyN(97)), []string{"org.late"}); err != nil {
		t.Fatal(err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, bAudit).Delete(u64(3)) }); err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("later", pub(testKeyN(98)), []string{"org.later"}); err != nil {
		t.Fatalf("an append after a gap: %v", err)
	}
	log, err := s.Audit()
	if err != nil || len(log) != 3 || log[2].Seq != 4 || log[2].TrustName != "later" {
		t.Fatalf("want entries 1, 2 and 4 (later): %v %v", log, err)
	}
}
