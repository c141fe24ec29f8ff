package resolver

import (
	"errors"
	"testing"

	bolt "go.etcd.io/bbolt"
)

// TestABundleWhoseRecordIsUnreadableIsRemovedWholeOrNotAtAll
//
// Damage: one installed bundle's record (bucket "bundles") torn or
// edited in the store file. The catalog and the listing leave that
// bundle out (docs/SPEC-DECISIONS.md STORE-4) and check names it
// (bundle_unreadable), but Remove read the record strictly, for the
// version it audits, and failed store_io: its index entries, blobs,
// descriptors, alias claims and DID entries stayed in the store for
// ever, a legacy type it claimed kept failing closed, and the operator's
// only way out was a restore from a backup (losing every change since).
//
// Defence (docs/SPEC-DECISIONS.md STORE-9): Remove of a bundle_id whose
// record does not decode removes it in one transaction as it removes any
// bundle, finding its entries by reading each bucket whole (its signed
// manifest, which names them, cannot be read): afterwards the store holds
// exactly what removing a sound record of it leaves (the high-water mark
// stays), the removal is audited ("remove", accepted, its bundle_id and
// no version: the version was in the record), and Remove returns version
// 0. A fault, or a second damaged entry of that bundle, fails it store_io
// with nothing written.
func TestABundleWhoseRecordIsUnreadableIsRemovedWholeOrNotAtAll(t *testing.T) {
	const id = "org.example.translate"
	install := func(t *testing.T) *Store {
		s := storeAt(t)
		t.Cleanup(func() { s.Close() })
		mustImport(t, s, sampleBytes(t, "translate"))
		mustImport(t, s, acmeClaiming(t, map[string]string{"text": "com.acme.geo.geocode"}))
		return s
	}
	// What removing the sound record leaves, the audit log aside.
	ref := install(t)
	if _, err := ref.Remove(id); err != nil {
		t.Fatal(err)
	}
	want := dumpBesidesAudit(t, ref)

	for _, tc := range []struct {
		name   string
		record func([]byte) []byte
		damage func(t *testing.T, s *Store) // more damage, or a fault
		// removed: the removal takes effect; else it fails store_io and
		// changes nothing.
		removed bool
	}{
		{"a torn record", torn, nil, true},
		{"a record that is not cbor", notCBOR, nil, true},
		{"a torn record, a fault before the commit", torn, func(_ *testing.T, s *Store) {
			setFaults(s, func(step string) error {
				if step == "remove" {
					return errors.New("injected")
				}
				return nil
			})
		}, false},
		{"a torn record and a torn index entry of it", torn, func(t *testing.T, s *Store) {
			var key []byte
			if err := s.db.View(func(tx *bolt.Tx) error {
				key, _ = bucket(tx, bIndex).Cursor().Seek(key2(id, ""))
				key = clone(key)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			damageRecord(t, s, bIndex, key, torn)
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := install(t)
			damageRecord(t, s, bBundles, []byte(id), tc.record)
			if tc.damage != nil {
				tc.damage(t, s)
			}
			before, gen := dump(t, s), s.Generation()
			version, err := s.Remove(id)
			if !tc.removed {
				if !errors.Is(err, ErrStoreIO) {
					t.Fatalf("Remove = %d, %v; want store_io", version, err)
				}
				if dump(t, s) != before || s.Generation() != gen {
					t.Fatal("a failed removal changed the store")
				}
				return
			}
			if err != nil {
				t.Fatalf("Remove of a bundle whose record is unreadable: %v; want it removed", err)
			}
			if version != 0 {
				t.Fatalf("Remove returned version %d of a record it could not read", version)
			}
			if got := dumpBesidesAudit(t, s); got != want {
				t.Fatalf("the store after the removal differs from a sound record's removal:\n%s\nwant:\n%s", got, want)
			}
			if e := lastAudit(t, s); e.Action != "remove" || e.Verdict != verdictAccepted || e.BundleID != id || e.Version != 0 {
				t.Fatalf("removal audited as %+v", e)
			}
			if err := s.VerifyAudit(); err != nil {
				t.Fatal(err)
			}
			if ps, err := s.Check(); err != nil || len(ps) > 0 {
				t.Fatalf("check after the removal: %v %v", ps, err)
			}
			if got, err := resolveAsCaller(t, catalogNames(t, s), "text"); err != nil || got != "com.acme.geo.geocode" {
				t.Fatalf("the other bundle's type resolves to %q, %v", got, err)
			}
		})
	}
}
