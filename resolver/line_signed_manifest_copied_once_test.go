package resolver

import (
	"bytes"
	"runtime/debug"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/trust"
	bolt "go.etcd.io/bbolt"
)

// TestLoadingABundleLineCopiesItsSignedManifestOnce
//
// Attack: every judgement of an installed bundle (a catalog rebuild at
// each new generation, a listing for /readyz, metrics or `ampbundle
// ls`, a trust change that loads every line) loads its line, whose
// record holds the whole signed manifest (up to bundle.MaxManifestSize).
// loadLine cloned the record's Signed after decode had already copied it
// out of the store: one more manifest's worth of bytes per line loaded,
// for nothing.
//
// Defence (docs/SPEC-DECISIONS.md TRUST-35): loadLine keeps the copy
// decode made. Over stores of 2 and 6 bundles of 2,000 artifacts (about
// 240 KB of signed manifest each), per installed bundle, the bytes
// loading its line allocates beyond decoding its stored record (the
// least of three runs of each): before, about the signed manifest; now
// at most half of it.
func TestLoadingABundleLineCopiesItsSignedManifestOnce(t *testing.T) {
	if testalloc.Race {
		t.Skip("allocation bounds are not judged under the race detector")
	}
	const few, many = 2, 6
	var loaded, records [2]uint64
	var manifests [2]int
	for i, n := range []int{few, many} {
		s, total := judgedLinesStore(t, n)
		manifests[i] = total
		var raws [][]byte
		if err := s.db.View(func(tx *bolt.Tx) error {
			return bucket(tx, bBundles).ForEach(func(_, v []byte) error { raws = append(raws, clone(v)); return nil })
		}); err != nil {
			t.Fatal(err)
		}
		decodeRecords := func() {
			for _, raw := range raws {
				var r bundleRecord
				if err := decode(raw, &r); err != nil {
					t.Fatal(err)
				}
			}
		}
		gc := debug.SetGCPercent(-1)
		loaded[i] = testalloc.Least(func() { loadEachLine(t, s) })
		records[i] = testalloc.Least(decodeRecords)
		debug.SetGCPercent(gc)
	}
	perBundle := func(b [2]uint64) int64 { return (int64(b[1]) - int64(b[0])) / (many - few) }
	manifest := (manifests[1] - manifests[0]) / (many - few)
	extra := perBundle(loaded) - perBundle(records)
	t.Logf("per installed bundle (%d bytes of signed manifest): loading its line allocates %d bytes, decoding its record %d: %d more",
		manifest, perBundle(loaded), perBundle(records), extra)
	if extra > int64(manifest/2) {
		t.Fatalf("loading a bundle line allocates %d bytes beyond decoding its record, more than half its %d bytes of signed manifest: the manifest is copied again",
			extra, manifest)
	}
}

// TestALoadedBundleLineKeepsNoByteOfTheStoresPages
//
// Attack: bbolt's Get returns memory of the store's pages, valid only
// while its transaction is open; a page freed later (the record removed
// or replaced) is written again by later transactions. A loaded line
// that kept such bytes as its signed manifest would judge, after its
// transaction, whatever the store wrote there since.
//
// Defence (docs/SPEC-DECISIONS.md TRUST-35): the clone loadLine made was
// dropped because decode copies a byte string out of its input
// (amp.Limits.Unmarshal). This guards that premise: a line loaded in one
// transaction keeps the same signed manifest after its bundle's record
// is deleted and its pages written over by other records; and a record
// decoded from a buffer keeps nothing of the buffer.
func TestALoadedBundleLineKeepsNoByteOfTheStoresPages(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, heavyLineBundle(t, 0, 400, testNow.Add(24*time.Hour)))
	id := "org.example.line0000"
	st := (&trust.State{}).Clone()
	var raw []byte
	if err := s.db.View(func(tx *bolt.Tx) error {
		raw = clone(bucket(tx, bBundles).Get([]byte(id)))
		return loadLine(tx, st, id, true)
	}); err != nil {
		t.Fatal(err)
	}
	want := clone(st.Installed[id].Signed)
	if len(want) == 0 {
		t.Fatal("the line loaded no signed manifest")
	}
	// Free the record's pages, then write over them.
	if err := s.db.Update(func(tx *bolt.Tx) error { return bucket(tx, bBundles).Delete([]byte(id)) }); err != nil {
		t.Fatal(err)
	}
	for i := range 4 {
		if err := s.db.Update(func(tx *bolt.Tx) error {
			return bucket(tx, bBundles).Put([]byte{'z', byte(i)}, bytes.Repeat([]byte{0xA5}, len(raw)))
		}); err != nil {
			t.Fatal(err)
		}
	}
	got := clone(st.Installed[id].Signed)
	// Put the store back as it was, for its check after the test.
	if err := s.db.Update(func(tx *bolt.Tx) error {
		for i := range 4 {
			if err := bucket(tx, bBundles).Delete([]byte{'z', byte(i)}); err != nil {
				return err
			}
		}
		return bucket(tx, bBundles).Put([]byte(id), raw)
	}); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the loaded signed manifest changed after its transaction: it is the store's memory")
	}
	var r bundleRecord
	if err := decode(raw, &r); err != nil {
		t.Fatal(err)
	}
	signed := clone(r.Signed)
	for i := range raw {
		raw[i] = 0xA5
	}
	if !bytes.Equal(r.Signed, signed) {
		t.Fatal("a decoded record's signed manifest shares the bytes it was decoded from")
	}
}
