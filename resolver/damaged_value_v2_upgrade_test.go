package resolver

import (
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestDamagedValueInVersion2StoreKeepsTheAgentServing: one meta value of
// the wrong size (here the key_floor of a did:key the store never
// trusted) in a version 2 store fails its upgrade (a strict read,
// TSTATE-6). Were that fatal, every writable open would fail (ampagent
// serve, check --repair), though the same damage at version 3 only
// refuses trust changes. The writable open succeeds with the store left
// at version 2 (UpgradeError says why): it serves its bundles, a trust
// change is store_io, check reports the value; once it is repaired, the
// next writable open upgrades the store.
func TestDamagedValueInVersion2StoreKeepsTheAgentServing(t *testing.T) {
	s := storeAt(t)
	path := s.path
	mustImport(t, s, variant(t, 1, nil))
	damaged := keyFloorKey("did:key:z6MkNeverTrusted")
	r, err := asV2(t, s, func(tx *bolt.Tx) error { return bucket(tx, bMeta).Put(damaged, []byte{1, 2, 3}) }, nil)
	if err != nil {
		t.Fatalf("a version 2 store with one damaged key_floor: the writable open fails: %v", err)
	}
	expectName(t, r.UpgradeError(), ErrStoreIO)
	if b, err := r.Bundles(); err != nil || len(b) != 1 || b[0].Expired {
		t.Fatalf("bundles of the opened store: %v %v", b, err)
	}
	if _, err := r.Resolve(descriptorRef(t, r)); err != nil {
		t.Fatalf("resolve on the store left at version 2: %v", err)
	}
	expectName(t, r.TrustAdd("late", pub(testKeyN(96)), []string{"org.late"}), ErrStoreIO)
	ps, err := r.Check()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 2 || ps[0].Kind != "meta" || ps[1].Kind != "meta" {
		t.Fatalf("check of the store left at version 2: %v", ps)
	}
	if err := r.db.Update(func(tx *bolt.Tx) error { return bucket(tx, bMeta).Delete(damaged) }); err != nil {
		t.Fatal(err)
	}
	r.Close()
	if v := schemaVersionOf(t, path); v != 2 {
		t.Fatalf("a failed upgrade left version %d", v)
	}
	again, err := Open(path, Options{Now: r.opts.Now})
	if err != nil {
		t.Fatal(err)
	}
	if again.UpgradeError() != nil {
		t.Fatalf("repaired, the upgrade still fails: %v", again.UpgradeError())
	}
	checkClose(t, again)
	if v := schemaVersionOf(t, path); v != SchemaVersion {
		t.Fatalf("repaired, the next writable open left version %d", v)
	}
}
