package resolver

import (
	"fmt"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestDamagedAuditSequenceNeverOverwritesTheLog: the audit sequence of
// the wrong size (a torn or edited file), read as 0, would have the next
// act write its entry under sequence 1, over the oldest entry of the log,
// and each act after it over the next: the log the upgrade and every
// investigation read destroyed by ordinary use. It is store_io: the act
// is refused, the log untouched, and check reports the value.
func TestDamagedAuditSequenceNeverOverwritesTheLog(t *testing.T) {
	s := storeAt(t)
	defer s.Close()
	before, err := s.Audit()
	if err != nil || len(before) < 2 {
		t.Fatalf("precondition: a store with an audit log: %d %v", len(before), err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bMeta).Put([]byte(kAuditSeq), []byte{0, 0, 0, 0, 0, 2})
	}); err != nil {
		t.Fatal(err)
	}
	expectName(t, s.TrustAdd("late", pub(testKeyN(96)), []string{"org.late"}), ErrStoreIO)
	_, err = importBytes(t, s, variant(t, 1, nil), ImportOptions{})
	expectName(t, err, ErrStoreIO)
	after, err := s.Audit()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("a 6-byte audit sequence: the refused acts changed the log: %d entries before, %d after", len(before), len(after))
	}
	ps, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	meta := false
	for _, p := range ps {
		meta = meta || p.Kind == "meta"
	}
	if !meta {
		t.Fatalf("check of a store with a 6-byte audit sequence does not report it (kind meta): %v", ps)
	}
}
