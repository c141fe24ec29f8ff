package resolver

import (
	"runtime/debug"
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/trust"
	bolt "go.etcd.io/bbolt"
)

// storedSigned returns the signed manifest of each installed bundle of
// s, copied out of the store.
func storedSigned(t *testing.T, s *Store) [][]byte {
	t.Helper()
	var out [][]byte
	err := s.db.View(func(tx *bolt.Tx) error {
		return bucket(tx, bBundles).ForEach(func(_, v []byte) error {
			var r bundleRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			out = append(out, clone(r.Signed))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// loadEachLine loads, in one transaction, the line of each installed
// bundle of s into one judge, and drops it, as a rebuild does before it
// judges the line.
func loadEachLine(t *testing.T, s *Store) {
	t.Helper()
	err := s.db.View(func(tx *bolt.Tx) error {
		j := s.judge(tx)
		return bucket(tx, bBundles).ForEach(func(k, _ []byte) error {
			_, err := j.line(string(k))
			j.drop(string(k))
			return err
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestACatalogRebuildJudgingStalenessAndFloorDecodesEachManifestOnce
//
// Attack: under a freshness policy (or once any heartbeat is kept), the
// catalog is rebuilt at each new store generation (an import, a removal,
// a trust change, a heartbeat or a statement, which peers send), and
// the agent's first CAP_QUERY or CAP_INVOKE after it waits for it. A
// bundle whose expiry its keys' newest signed time reaches has both its
// staleness and its floor judged: trust.Prepared.Stale and
// trust.Prepared.InstalledFloor each decoded its signed manifest, about
// ten times the manifest's bytes allocated per decode, so the rebuild
// paid two decodes per bundle (docs/SPEC-DECISIONS.md STORE-10, left
// open).
//
// Defence (docs/SPEC-DECISIONS.md TRUST-34): trust.Prepared.StaleAndFloor
// decodes the manifest once for both answers. Over stores of 2 and 6
// bundles of 2,000 artifacts (about 240 KB of signed manifest each),
// per installed bundle, the bytes a rebuild allocates beyond loading
// each line once and decoding its manifest once (the least of three
// runs of each): before, about one more decode (some 2.4 MB); now at
// most half a decode.
func TestACatalogRebuildJudgingStalenessAndFloorDecodesEachManifestOnce(t *testing.T) {
	if testalloc.Race {
		t.Skip("allocation bounds are not judged under the race detector")
	}
	const few, many = 2, 6
	var rebuilt, loaded, decoded [2]uint64
	for i, n := range []int{few, many} {
		s, _ := judgedLinesStore(t, n)
		signed := storedSigned(t, s)
		rebuild := func() {
			forgetJudgements(s)
			if c, err := s.Catalog(); err != nil || len(c.Names) != 0 {
				t.Fatalf("catalog: %v, %v; want every bundle expired by its floor", c, err)
			}
		}
		decodeOnce := func() {
			for _, b := range signed {
				in := trust.Installed{Signed: b}
				if _, _, ok := in.Manifest(); !ok {
					t.Fatal("a stored signed manifest does not decode")
				}
			}
		}
		rebuild()
		// No collection while the work runs: one that empties the pools
		// (sync.Pool) the decoders reuse buffers from midway would count
		// buffers again on some runs and not others.
		gc := debug.SetGCPercent(-1)
		rebuilt[i] = testalloc.Least(rebuild)
		loaded[i] = testalloc.Least(func() { loadEachLine(t, s) })
		decoded[i] = testalloc.Least(decodeOnce)
		debug.SetGCPercent(gc)
	}
	perBundle := func(b [2]uint64) int64 { return (int64(b[1]) - int64(b[0])) / (many - few) }
	decode := perBundle(decoded)
	extra := perBundle(rebuilt) - perBundle(loaded) - decode
	t.Logf("per installed bundle: a rebuild allocates %d bytes; loading its line %d, decoding its manifest %d: %d more",
		perBundle(rebuilt), perBundle(loaded), decode, extra)
	if extra > decode/2 {
		t.Fatalf("a catalog rebuild allocates %d bytes per installed bundle beyond loading its line and decoding its signed manifest once, more than half a decode (%d bytes): its manifest is decoded again",
			extra, decode)
	}
}
