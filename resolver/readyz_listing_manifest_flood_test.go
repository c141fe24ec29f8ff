package resolver

import (
	"bytes"
	"crypto/ed25519"
	"crypto/sha256"
	"fmt"
	"reflect"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// manifestHeavyBundle is a bundle org.example.heavyI of n one-word
// artifacts: its signed manifest, naming each by hash, is about 100 n
// bytes (n = 5,000: about 600 KiB).
func manifestHeavyBundle(t testing.TB, i, n int) []byte {
	t.Helper()
	id := fmt.Sprintf("org.example.heavy%d", i)
	d := &bundle.Draft{BundleID: id, Version: 1, CreatedAt: testNow.Add(-time.Hour)}
	for j := 0; j < n; j++ {
		d.Artifacts = append(d.Artifacts, bundle.BytesSource(fmt.Sprintf("blobs/%05d.bin", j), "application/octet-stream",
			[]byte{byte(i), byte(j), byte(j >> 8), byte(j >> 16)}))
	}
	in, out := "capabilities/"+id+".op/1.0.0/input.schema.json", "capabilities/"+id+".op/1.0.0/output.schema.json"
	d.Artifacts = append(d.Artifacts, bundle.BytesSource(in, bundle.MediaTypeSchema, []byte(`{"type":"object"}`)),
		bundle.BytesSource(out, bundle.MediaTypeSchema, []byte(`{"type":"object","properties":{}}`)))
	v, _ := capability.ParseVersion("1.0.0")
	d.Capabilities = []capability.Descriptor{{Name: id + ".op", Version: v,
		InputSchema: capability.SchemaRef{ArtifactKey: in}, OutputSchema: capability.SchemaRef{ArtifactKey: out}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{sampleKey(t, "example-publisher")}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// manifestHeavyStore is a store of n manifest-heavy bundles; it returns
// the stored signed manifests' total size.
func manifestHeavyStore(t testing.TB, n, artifacts int) (*Store, int) {
	t.Helper()
	s := newStore(t)
	for i := 0; i < n; i++ {
		mustImport(t, s, manifestHeavyBundle(t, i, artifacts))
	}
	bs, err := s.Bundles()
	if err != nil || len(bs) != n {
		t.Fatalf("bundles: %d, %v", len(bs), err)
	}
	total := 0
	err = s.db.View(func(tx *bolt.Tx) error {
		return bucket(tx, bBundles).ForEach(func(_, v []byte) error {
			var r bundleRecord
			if err := decode(v, &r); err != nil {
				return err
			}
			total += len(r.Signed)
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return s, total
}

// TestReadyzProbeHashesNoStoredManifestAgain
//
// Attack: GET /readyz on the agent's --listen (any peer that reaches it:
// no Host rule off loopback, no peer share of its own) and a metrics
// scrape call Store.Bundles, which hashed every stored signed manifest
// (up to 16 MiB each) on every call to fill ManifestSHA256 (MIRROR-20): a
// peer polling /readyz turns the store's manifests into CPU, again and
// again, though nothing changed.
//
// Defence: the hash is a property of the stored record, which changes
// only with the store's generation: hashed once per generation
// (judgedCache), the calls after the first hash nothing (before: 20 calls
// hashed the manifests 20 times). Bound: the first call hashes each of
// the 4 manifests once, the 20 calls after it none (judgedCache.hashes);
// the time of the 20 calls and of hashing the manifests once are logged.
func TestReadyzProbeHashesNoStoredManifestAgain(t *testing.T) {
	s, total := manifestHeavyStore(t, 4, 5000)
	before := s.judged.hashes.Load()
	first, err := s.Bundles() // the one call of this generation that may hash
	if err != nil {
		t.Fatal(err)
	}
	if n := s.judged.hashes.Load() - before; n > int64(len(first)) {
		t.Fatalf("the first listing of %d bundles hashed %d manifests, want at most one each", len(first), n)
	}
	const calls = 20
	var last []Bundle
	before = s.judged.hashes.Load()
	start := time.Now()
	for i := 0; i < calls; i++ {
		if last, err = s.Bundles(); err != nil {
			t.Fatal(err)
		}
	}
	took, hashed := time.Since(start), s.judged.hashes.Load()-before
	hashStart := time.Now()
	sha256.Sum256(make([]byte, total))
	t.Logf("%d listings: %d manifests hashed, %v; hashing the %d manifest bytes once: %v", calls, hashed, took, total, time.Since(hashStart))
	if !reflect.DeepEqual(last, first) {
		t.Fatalf("a listing at the same generation differs from the first: %+v, then %+v", first, last)
	}
	for _, b := range first {
		if b.BundleID == "" || b.Version != 1 || b.ImportedAt == "" || len(b.Signers) != 1 || len(b.ManifestSHA256) != 64 {
			t.Fatalf("listed: %+v", b)
		}
	}
	if hashed != 0 {
		t.Fatalf("%d listings of a store of %d manifest bytes, at one generation, hashed %d manifests, want none: each listing hashes them again",
			calls, total, hashed)
	}
}

// TestReadyzProbeCopiesNoStoredManifest
//
// Attack: as above, each call of Store.Bundles decoded every stored
// record whole, copying its signed manifest out of the store, and judged
// staleness by loading (and copying) it twice more: three copies of every
// manifest allocated per /readyz request or metrics scrape, though
// listing a bundle needs none of its bytes but their hash.
//
// Defence: a listing decodes each record without its manifest
// (listedRecord) and judges staleness once per generation (judgedCache):
// at an unchanged generation it allocates far less than the manifests it
// lists (bound: a sixteenth of their bytes per call; before: about 3
// times their bytes).
func TestReadyzProbeCopiesNoStoredManifest(t *testing.T) {
	s, total := manifestHeavyStore(t, 4, 5000)
	if _, err := s.Bundles(); err != nil {
		t.Fatal(err)
	}
	const calls = 10
	per := testalloc.LeastPerRun(calls, func() {
		if _, err := s.Bundles(); err != nil {
			t.Fatal(err)
		}
	})
	if per > uint64(total/16) {
		t.Fatalf("a listing of a store of %d manifest bytes, at one generation, allocates %d bytes: it copies the manifests out of the store", total, per)
	}
}
