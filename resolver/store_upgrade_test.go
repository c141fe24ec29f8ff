package resolver

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// The store's schema version 3 (docs/SPEC-DECISIONS.md TSTATE-5): a build
// of version 2 refuses it, so it never opens a store without the
// protections it does not know; this build upgrades a version 2 store at
// its first writable open, all or nothing.

// storeAt opens a fresh store that trusts the example and acme
// publishers, as newStore does, but leaves its closing to the test (which
// reopens it as a version 2 store: asV2).
func storeAt(t *testing.T) *Store {
	t.Helper()
	s, err := Open(filepath.Join(t.TempDir(), "store.db"), Options{Now: func() time.Time { return testNow }, Create: true})
	if err != nil {
		t.Fatal(err)
	}
	for name, k := range map[string]string{"example": "example-publisher", "acme": "acme-publisher"} {
		scope := map[string]string{"example": "org.example", "acme": "com.acme"}[name]
		if err := s.TrustAdd(name, pub(sampleKey(t, k)), []string{scope}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// asV2 makes s what a build of schema version 2 left (edit, then the
// version written back to 2: the layout is the same), closes it, and
// reopens it with this build (faults: the upgrade's fault hook); the
// test closes the reopened store (checkClose).
func asV2(t *testing.T, s *Store, edit func(tx *bolt.Tx) error, faults func(string) error) (*Store, error) {
	t.Helper()
	if err := s.db.Update(func(tx *bolt.Tx) error {
		if edit != nil {
			if err := edit(tx); err != nil {
				return err
			}
		}
		return bucket(tx, bMeta).Put([]byte(kSchemaVersion), u64(2))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, err := open(s.path, Options{Now: func() time.Time { return testNow }}, faults)
	if err != nil {
		return nil, err
	}
	return r, nil
}

// checkClose checks s (ampbundle check finds nothing) and closes it.
func checkClose(t *testing.T, s *Store) {
	t.Helper()
	if ps, err := s.Check(); err != nil || len(ps) > 0 {
		t.Errorf("store check after the test: %v %v", ps, err)
	}
	s.Close()
}

func schemaVersionOf(t *testing.T, path string) uint64 {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var v uint64
	_ = db.View(func(tx *bolt.Tx) error { v = getU64(bucket(tx, bMeta).Get([]byte(kSchemaVersion))); return nil })
	return v
}

// TestStoreOfSchemaVersion2UpgradesOnce: the first writable open of a
// version 2 store upgrades it to 3, and the next open finds nothing to do.
func TestStoreOfSchemaVersion2UpgradesOnce(t *testing.T) {
	s := storeAt(t)
	path := s.path
	upgrades := 0
	r, err := asV2(t, s, nil, func(step string) error {
		if step == "upgrade" {
			upgrades++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if upgrades != 1 {
		t.Fatalf("the upgrade ran %d times", upgrades)
	}
	checkClose(t, r)
	if v := schemaVersionOf(t, path); v != SchemaVersion {
		t.Fatalf("after the first writable open, the store is of version %d, want %d", v, SchemaVersion)
	}
	again, err := open(path, Options{Now: func() time.Time { return testNow }}, func(step string) error {
		if step == "upgrade" {
			upgrades++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	again.Close()
	if upgrades != 1 {
		t.Fatalf("a version %d store was upgraded again", SchemaVersion)
	}
}

// TestInterruptedUpgradeLeavesAVersion2Store: an upgrade that fails (a
// kill -9 before its commit reads the same) leaves the store of version
// 2, with no marker of a migration it wrote, and the next open upgrades
// it.
func TestInterruptedUpgradeLeavesAVersion2Store(t *testing.T) {
	s := storeAt(t)
	path := s.path
	_, err := asV2(t, s, func(tx *bolt.Tx) error {
		meta := bucket(tx, bMeta)
		for _, k := range []string{kRemovedMigrated, kChargesCounted, kStatementChargesCounted} {
			if err := meta.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	}, func(step string) error {
		if step == "upgrade" {
			return errors.New("killed")
		}
		return nil
	})
	if err == nil {
		t.Fatal("an open whose upgrade failed succeeded")
	}
	expectName(t, err, ErrStoreIO)
	if v := schemaVersionOf(t, path); v != 2 {
		t.Fatalf("an interrupted upgrade left a store of version %d, want 2", v)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		for _, k := range []string{kRemovedMigrated, kChargesCounted, kStatementChargesCounted} {
			if bucket(tx, bMeta).Get([]byte(k)) != nil {
				t.Errorf("an interrupted upgrade left its marker %s", k)
			}
		}
		return nil
	})
	db.Close()
	r, err := Open(path, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("the next open: %v", err)
	}
	r.Close()
	if v := schemaVersionOf(t, path); v != SchemaVersion {
		t.Fatalf("the next open left version %d", v)
	}
}

// TestStoreOfANewerSchemaVersionIsRefused: a store a later build wrote
// (version 4) holds protections this build does not know: refused, read
// only or not, and left as it was.
func TestStoreOfANewerSchemaVersionIsRefused(t *testing.T) {
	s := storeAt(t)
	path := s.path
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bMeta).Put([]byte(kSchemaVersion), u64(SchemaVersion+1))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, ro := range []bool{false, true} {
		if r, err := Open(path, Options{ReadOnly: ro}); err == nil {
			r.Close()
			t.Fatalf("read-only %v: a store of schema version %d was opened", ro, SchemaVersion+1)
		} else {
			expectName(t, err, ErrStoreVersion)
		}
	}
	if v := schemaVersionOf(t, path); v != SchemaVersion+1 {
		t.Fatalf("a refused store was changed to version %d", v)
	}
}

// TestReadOnlyOpenOfAVersion2StoreWritesNothing: a read-only open reads a
// version 2 store as it is (the migrations it needs run in memory) and
// leaves it of version 2.
func TestReadOnlyOpenOfAVersion2StoreWritesNothing(t *testing.T) {
	s := storeAt(t)
	path := s.path
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bMeta).Put([]byte(kSchemaVersion), u64(2))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	r, err := Open(path, Options{ReadOnly: true, Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatalf("read-only open of a version 2 store: %v", err)
	}
	keys, err := r.TrustList()
	r.Close()
	if err != nil || len(keys) != 2 {
		t.Fatalf("the trusted keys of a version 2 store read only: %v %v", keys, err)
	}
	if v := schemaVersionOf(t, path); v != 2 {
		t.Fatalf("a read-only open changed the store to version %d", v)
	}
}
