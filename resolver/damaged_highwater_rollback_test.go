package resolver

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestDamagedHighWaterMarkRefusesRollback: the high-water mark is the
// rollback protection of a removed bundle. One of the wrong size (a torn
// or edited file), read as 0, would let an old version of the bundle in
// with no --allow-downgrade. It is store_io at import (with or without
// --allow-downgrade: the mark is not overwritten either), and ampbundle
// check reports it (kind "meta").
func TestDamagedHighWaterMarkRefusesRollback(t *testing.T) {
	s := newStore(t)
	v1, v2 := variant(t, 1, nil), variant(t, 2, nil)
	mustImport(t, s, v2)
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	id := []byte("org.example.translate")
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bHighwater).Put(id, []byte{0, 0, 0, 0, 0, 0, 2})
	}); err != nil {
		t.Fatal(err)
	}
	ps, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 1 || ps[0].Kind != "meta" {
		t.Fatalf("check of a store with a 7-byte high-water mark: %v", ps)
	}
	for _, downgrade := range []bool{false, true} {
		_, err = importBytes(t, s, v1, ImportOptions{AllowDowngrade: downgrade})
		expectName(t, err, ErrStoreIO)
	}
	// Repaired (the store's own value restored), the rollback is refused
	// as ever.
	if err := s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, bHighwater).Put(id, u64(2)) }); err != nil {
		t.Fatal(err)
	}
	_, err = importBytes(t, s, v1, ImportOptions{})
	expectName(t, err, ErrRollback)
}
