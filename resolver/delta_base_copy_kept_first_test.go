package resolver

import (
	"bytes"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestDeltaAppliesOverACopyOfItsBaseKeptFirst
//
// Attack (a hostile mirror or courier, which is never trusted, MIRROR-4):
// the signature list of a bundle is covered by no signature, so a copy of
// the publisher's release with a throwaway key's genuine signature added
// verifies under the store's policy (the publisher's signature counts,
// TRUST-20). Delivered first, it is installed; the publisher's own file is
// then `unchanged` and the copy stays (BUNDLE-8: no swap by arrival
// order). A delta names its base by the SHA-256 of the base's signed
// manifest, signatures included (docs/FORMAT.md §12.2), and the store
// required that very file installed: every delta the publisher built
// against its own file was refused delta_base_missing at that store, for
// good, and a site that lives on deltas had to be sent full bundles.
//
// Now the installed copy at the base version is the base whatever its
// signed manifest's hash (BUNDLE-21): the delta applies, and the store
// ends exactly as the full bundle over that copy leaves it (export gives
// the publisher's full file byte for byte).
func TestDeltaAppliesOverACopyOfItsBaseKeptFirst(t *testing.T) {
	publisher, throwaway := sampleKey(t, "example-publisher"), testKeyN(94)
	v1 := variant(t, 1, nil)
	copyV1 := resigned(t, v1, publisher, throwaway)
	for _, skip := range []bool{false, true} {
		delta, full := deltaOf(t, v1, 3, changeOneSchema)
		viaDelta, viaFull := newStore(t), newStore(t)
		mustImport(t, viaDelta, copyV1) // the mirror's copy, first
		mustImport(t, viaFull, copyV1)
		if ir, err := importBytes(t, viaDelta, v1, ImportOptions{}); err != nil || !ir.Unchanged {
			t.Fatalf("the publisher's own file after the copy: %+v, %v; want unchanged", ir, err)
		}
		res, err := importBytes(t, viaDelta, delta, ImportOptions{SkipBaseRehash: skip})
		if err != nil {
			t.Fatalf("skip-base-rehash %v: the publisher's delta against its own release of version 1, which is installed as a copy: %v", skip, err)
		}
		if res.Delta == nil || res.Delta.FromBase == 0 || res.Delta.BaseVersion != 1 || res.PreviousVersion != 1 || res.Version != 3 {
			t.Fatalf("delta import result %+v %+v", res, res.Delta)
		}
		mustImport(t, viaFull, full)
		expectAsTheFullImport(t, viaDelta, viaFull, full)
	}
}

// expectAsTheFullImport fails unless viaDelta, a store a delta was
// imported into, exports the full bundle byte for byte and holds what
// viaFull holds after the full bundle over the same base.
func expectAsTheFullImport(t *testing.T, viaDelta, viaFull *Store, full []byte) {
	t.Helper()
	if got := exportBytes(t, viaDelta, "org.example.translate"); !bytes.Equal(got, full) {
		t.Fatal("export after the delta differs from the publisher's full bundle")
	}
	if dumpBesidesAudit(t, viaDelta) != dumpBesidesAudit(t, viaFull) {
		t.Fatal("the store after the delta differs from the store after the full import over the same base")
	}
}

// TestDeltaWhoseBaseVersionIsNotInstalledIsStillRefused: the base is
// taken only at the version the signed header names; no other installed
// version, older or newer, copy or not, is ever taken for it. The refusal
// names the base, and the store is left exactly as it was.
func TestDeltaWhoseBaseVersionIsNotInstalledIsStillRefused(t *testing.T) {
	publisher, throwaway := sampleKey(t, "example-publisher"), testKeyN(94)
	v1, v2 := variant(t, 1, nil), variant(t, 2, nil)
	deltaFrom1, _ := deltaOf(t, v1, 3, changeOneSchema)
	deltaFrom2, _ := deltaOf(t, v2, 3, changeOneSchema)
	cases := []struct {
		name    string
		install [][]byte
		delta   []byte
		base    string
	}{
		{"empty store", nil, deltaFrom1, "org.example.translate version 1"},
		{"a copy of a newer version than the base", [][]byte{resigned(t, v2, publisher, throwaway)}, deltaFrom1, "org.example.translate version 1"},
		{"the publisher's older version than the base", [][]byte{v1}, deltaFrom2, "org.example.translate version 2"},
		{"a copy of an older version than the base", [][]byte{resigned(t, v1, publisher, throwaway)}, deltaFrom2, "org.example.translate version 2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			for _, b := range c.install {
				mustImport(t, s, b)
			}
			before := dumpBesidesAudit(t, s) // a refusal is audited
			_, err := importBytes(t, s, c.delta, ImportOptions{})
			expectName(t, err, bundle.ErrDeltaBaseMissing)
			if !strings.Contains(err.Error(), c.base) {
				t.Fatalf("error does not name the base %s: %v", c.base, err)
			}
			if dumpBesidesAudit(t, s) != before {
				t.Fatal("a refused delta changed the store")
			}
		})
	}
}

// TestDeltaOverAnotherPayloadOfItsBaseVersion: a store may hold another
// payload at the base version (a release its trusted signers signed twice
// under one version, or one re-imported with --allow-downgrade). Such a
// base cannot make the store take bytes the delta's signed manifest does
// not name: an omitted artifact it does not list with the same bytes
// refuses the delta (delta_mismatch), changing nothing, with or without
// --skip-base-rehash; one that lists every omitted artifact with the same
// bytes supplies exactly those bytes, and the store ends as the full
// bundle over it leaves it.
func TestDeltaOverAnotherPayloadOfItsBaseVersion(t *testing.T) {
	v1 := variant(t, 1, nil)
	delta, full := deltaOf(t, v1, 3, changeOneSchema)
	otherLanguage := []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","$id":"https://schemas.example.org/common/language.json","type":"string","pattern":"^[a-z]{2}$"}`)
	lacking := variant(t, 1, func(d *bundle.Draft) { replaceArtifact(d, "schemas/common/language.json", otherLanguage) })
	for _, skip := range []bool{false, true} {
		s := newStore(t)
		mustImport(t, s, lacking)
		before := dumpBesidesAudit(t, s)
		_, err := importBytes(t, s, delta, ImportOptions{SkipBaseRehash: skip})
		expectName(t, err, bundle.ErrDeltaMismatch)
		if !strings.Contains(err.Error(), "schemas/common/language.json") {
			t.Fatalf("skip-base-rehash %v: the refusal does not name the artifact the base lacks: %v", skip, err)
		}
		if dumpBesidesAudit(t, s) != before {
			t.Fatalf("skip-base-rehash %v: a refused delta changed the store", skip)
		}
	}

	carrying := variant(t, 1, func(d *bundle.Draft) { d.CreatedAt = d.CreatedAt.Add(-time.Minute) })
	viaDelta, viaFull := newStore(t), newStore(t)
	mustImport(t, viaDelta, carrying)
	mustImport(t, viaFull, carrying)
	if _, err := importBytes(t, viaDelta, delta, ImportOptions{}); err != nil {
		t.Fatalf("a delta over another payload of its base version that lists every omitted artifact: %v", err)
	}
	mustImport(t, viaFull, full)
	expectAsTheFullImport(t, viaDelta, viaFull, full)
}

// TestDeltaRefusedWhenTheBaseCopyFoundIsSwappedBeforeCommit: the blobs a
// delta takes are the installed copy's, found before staging; the commit
// requires that very copy still installed (its signed manifest's hash),
// not merely some file of the base version, even the one the header
// names. A swap in between refuses the delta delta_base_missing, and the
// store keeps the swapped base, sound.
func TestDeltaRefusedWhenTheBaseCopyFoundIsSwappedBeforeCommit(t *testing.T) {
	publisher, throwaway := sampleKey(t, "example-publisher"), testKeyN(94)
	v1 := variant(t, 1, nil)
	delta, _ := deltaOf(t, v1, 3, changeOneSchema)
	in, err := bundle.Inspect(bytes.NewReader(v1), 0)
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	mustImport(t, s, resigned(t, v1, publisher, throwaway))
	setFaults(s, func(step string) error {
		if step != "commit" {
			return nil
		}
		setFaults(s, nil)
		err := s.db.Update(func(tx *bolt.Tx) error {
			var rec bundleRecord
			if err := decode(bucket(tx, bBundles).Get([]byte("org.example.translate")), &rec); err != nil {
				return err
			}
			rec.Signed = in.SignedManifest // the publisher's file, the one the header names
			return bucket(tx, bBundles).Put([]byte("org.example.translate"), encode(rec))
		})
		return err
	})
	_, err = importBytes(t, s, delta, ImportOptions{})
	expectName(t, err, bundle.ErrDeltaBaseMissing)
	if got := exportBytes(t, s, "org.example.translate"); !bytes.Equal(got, v1) {
		t.Fatal("a delta refused at commit did not leave the swapped base installed")
	}
	if problems, err := s.Check(); err != nil || len(problems) != 0 {
		t.Fatalf("check after a delta refused at commit: %v %v", problems, err)
	}
}
