package resolver

import (
	"bytes"
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

func TestImportSamples(t *testing.T) {
	s := newStore(t)
	g0 := s.Generation()
	res := mustImport(t, s, sampleBytes(t, "translate"))
	if res.BundleID != "org.example.translate" || res.Version != 1 || res.Signers[0] != "example" || len(res.Capabilities) != 4 {
		t.Fatalf("result %+v", res)
	}
	if s.Generation() == g0 {
		t.Fatal("import did not change the generation")
	}
	mustImport(t, s, sampleBytes(t, "geo"))
	c, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Names) != 3 || len(c.ByName["org.example.translate.text"]) != 4 {
		t.Fatalf("catalog names %v", c.Names)
	}
	vs := c.Versions("org.example.translate.text")
	if vs[0].String() != "1.0.0" || vs[3].String() != "2.1.0" {
		t.Fatalf("versions not in SemVer order: %v", vs)
	}
	if name, err := c.ResolveType("translate"); err != nil || name != "org.example.translate.text" {
		t.Fatalf("alias: %q %v", name, err)
	}
	bs, _ := s.Bundles()
	if len(bs) != 2 || bs[1].BundleID != "org.example.translate" || bs[1].Highest != 1 {
		t.Fatalf("bundles %+v", bs)
	}
	// Importing the very same file again changes nothing.
	g := s.Generation()
	res, err = importBytes(t, s, sampleBytes(t, "translate"), ImportOptions{})
	if err != nil || !res.Unchanged || s.Generation() != g {
		t.Fatalf("re-import: %+v %v", res, err)
	}
	// The DID document of the bundle resolves (amp.DIDResolver).
	doc, err := s.ResolveDID(context.Background(), "did:web:translator.example.org")
	if err != nil || doc.ID != "did:web:translator.example.org" {
		t.Fatalf("did: %v %v", doc, err)
	}
	if _, err := s.ResolveDID(context.Background(), "did:web:nobody.example.org"); err == nil {
		t.Fatal("unknown did resolved")
	}
}

// TestImportRefusesUntrusted: wrong key and out-of-scope signers (wrong key,
// namespace hijack).
func TestImportRefusesUntrusted(t *testing.T) {
	s := newStore(t)
	before := dump(t, s)
	s.TrustRemove("acme")
	s.TrustAdd("acme-wrong-scope", pub(sampleKey(t, "acme-publisher")), []string{"org.example"})
	_, err := importBytes(t, s, sampleBytes(t, "geo"), ImportOptions{})
	expectName(t, err, bundle.ErrUntrustedNamespace)
	s.TrustRemove("acme-wrong-scope")
	_, err = importBytes(t, s, sampleBytes(t, "geo"), ImportOptions{})
	expectName(t, err, bundle.ErrUntrustedKey)
	s.TrustAdd("acme", pub(sampleKey(t, "acme-publisher")), []string{"com.acme"})
	_ = before
}

// TestRollback: a version not newer than the highest ever imported is
// refused, also after removal; --allow-downgrade is audited.
func TestRollback(t *testing.T) {
	s := newStore(t)
	v1, v2 := variant(t, 1, nil), variant(t, 2, nil)
	mustImport(t, s, v2)
	before := dumpBesidesAudit(t, s)
	_, err := importBytes(t, s, v1, ImportOptions{})
	expectName(t, err, ErrRollback)
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("a refused rollback changed the store")
	}
	if e := lastAudit(t, s); e.Action != "import_refused" || e.Verdict != string(ErrRollback) || e.BundleID != "org.example.translate" || e.Version != 1 {
		t.Fatalf("refusal audited as %+v", e)
	}
	// Removal keeps the high-water mark.
	if _, err := s.Remove("org.example.translate"); err != nil {
		t.Fatal(err)
	}
	_, err = importBytes(t, s, v1, ImportOptions{})
	expectName(t, err, ErrRollback)
	// A different bundle with the same version is a rollback too.
	v2b := variant(t, 2, func(d *bundle.Draft) { d.Aliases = nil })
	_, err = importBytes(t, s, v2b, ImportOptions{})
	expectName(t, err, ErrRollback)
	// Explicit downgrade.
	res, err := importBytes(t, s, v1, ImportOptions{AllowDowngrade: true})
	if err != nil || !res.Downgrade {
		t.Fatalf("downgrade: %+v %v", res, err)
	}
	entries, _ := s.Audit()
	if last := entries[len(entries)-1]; last.Action != "downgrade" || last.Version != 1 {
		t.Fatalf("last audit entry %+v", last)
	}
	bs, _ := s.Bundles()
	if bs[0].Version != 1 || bs[0].Highest != 2 {
		t.Fatalf("after downgrade %+v", bs[0])
	}
}

// TestReplaceNewerVersion: a newer version replaces the older one; the
// blobs only the old one used are collected.
func TestReplaceNewerVersion(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, variant(t, 1, nil))
	oldText := []byte(`{"$schema":"https://json-schema.org/draft/2020-12/schema","title":"Text to translate","type":"string","minLength":1,"maxLength":5000}` + "\n")
	_ = oldText
	newText := []byte(`{"type":"string","minLength":1,"maxLength":100}`)
	v2 := variant(t, 2, func(d *bundle.Draft) { replaceArtifact(d, "schemas/common/text.json", newText) })
	var oldBlob string
	s.db.View(func(tx *bolt.Tx) error {
		var ir indexRecord
		decode(bucket(tx, bIndex).Get(key2("org.example.translate", "schemas/common/text.json")), &ir)
		oldBlob = ir.Blob
		return nil
	})
	res := mustImport(t, s, v2)
	if res.PreviousVersion != 1 || res.NewBlobs != 1 {
		t.Fatalf("replace: %+v", res)
	}
	s.db.View(func(tx *bolt.Tx) error {
		if hasBlob(tx, []byte(oldBlob)) {
			t.Error("the replaced version's unshared blob was not collected")
		}
		return nil
	})
	got, err := s.Resolve(capability.SchemaRef{BundleID: "org.example.translate", ArtifactKey: "schemas/common/text.json", HashAlg: "sha-256", Hash: sha(newText)})
	if err != nil || !bytes.Equal(got, newText) {
		t.Fatalf("new bytes: %v", err)
	}
}

// TestConflicts: a capability id, alias or DID another bundle provides.
func TestConflicts(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	other := func(edit func(d *bundle.Draft)) []byte {
		return variant(t, 1, func(d *bundle.Draft) {
			d.BundleID = "org.example.other"
			edit(d)
		})
	}
	// Same descriptors under another bundle_id.
	_, err := importBytes(t, s, other(func(d *bundle.Draft) { d.Aliases = nil; d.Artifacts = withoutDIDs(d.Artifacts) }), ImportOptions{})
	expectName(t, err, ErrCapConflict)
	// Only the alias, pointing elsewhere.
	_, err = importBytes(t, s, other(func(d *bundle.Draft) {
		d.Capabilities[0].Name = "org.example.other.text"
		d.Capabilities = d.Capabilities[:1]
		d.Aliases = map[string]string{"translate": "org.example.other.text"}
		d.Artifacts = withoutDIDs(d.Artifacts)
	}), ImportOptions{})
	expectName(t, err, ErrAliasConflict)
	// Only the DID document.
	_, err = importBytes(t, s, other(func(d *bundle.Draft) { d.Capabilities = nil; d.Aliases = nil }), ImportOptions{})
	expectName(t, err, ErrDIDConflict)
}

func withoutDIDs(as []bundle.Source) []bundle.Source {
	var out []bundle.Source
	for _, a := range as {
		if a.MediaType != bundle.MediaTypeDID {
			out = append(out, a)
		}
	}
	return out
}

// TestDedup: two bundles sharing a schema store it once; it survives the
// removal of one and goes with the last.
func TestDedup(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, variant(t, 1, nil))
	other := variant(t, 1, func(d *bundle.Draft) {
		d.BundleID = "org.example.copy"
		d.Capabilities, d.Aliases = nil, nil
		d.Artifacts = withoutDIDs(d.Artifacts)
	})
	res := mustImport(t, s, other)
	if res.NewBlobs != 0 {
		t.Fatalf("the second bundle stored %d new blobs; every artifact is shared", res.NewBlobs)
	}
	blob := BlobKey("sha-256", sha(mustRead(t, "translate/schemas/common/language.json")))
	refs := func() uint64 {
		var n uint64
		s.db.View(func(tx *bolt.Tx) error { n = getU64(bucket(tx, bBlobRefs).Get([]byte(blob))); return nil })
		return n
	}
	if refs() != 2 {
		t.Fatalf("language.json referenced %d times, want 2", refs())
	}
	s.Remove("org.example.translate")
	if refs() != 1 {
		t.Fatalf("after one removal: %d", refs())
	}
	s.Remove("org.example.copy")
	s.db.View(func(tx *bolt.Tx) error {
		n := 0
		forEachBlob(tx, func(_, _ []byte) error { n++; return nil })
		if n != 0 {
			t.Errorf("%d blobs left after removing every bundle", n)
		}
		return nil
	})
}

// TestConcurrentReadersSeeOldOrNew: while a new version is imported,
// readers see the old bundle or the new one, never a mix.
func TestConcurrentReadersSeeOldOrNew(t *testing.T) {
	s := newStore(t, func(o *Options) { o.StageBatchBytes = 1 }) // one transaction per artifact
	mustImport(t, s, variant(t, 1, nil))
	const key = "schemas/common/text.json"
	newText := []byte(`{"type":"string","maxLength":10}`)
	oldBlob := ""
	s.db.View(func(tx *bolt.Tx) error {
		var ir indexRecord
		decode(bucket(tx, bIndex).Get(key2("org.example.translate", key)), &ir)
		oldBlob = ir.Blob
		return nil
	})
	newBlob := BlobKey("sha-256", sha(newText))
	v2 := variant(t, 2, func(d *bundle.Draft) { replaceArtifact(d, key, newText) })
	var stop atomic.Bool
	var wg sync.WaitGroup
	var seenOld, seenNew, mixed atomic.Int64
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				s.db.View(func(tx *bolt.Tx) error {
					var rec bundleRecord
					decode(bucket(tx, bBundles).Get([]byte("org.example.translate")), &rec)
					var ir indexRecord
					decode(bucket(tx, bIndex).Get(key2("org.example.translate", key)), &ir)
					blobThere := hasBlob(tx, []byte(ir.Blob))
					switch {
					case rec.Version == 1 && ir.Blob == oldBlob && blobThere:
						seenOld.Add(1)
					case rec.Version == 2 && ir.Blob == newBlob && blobThere:
						seenNew.Add(1)
					default:
						mixed.Add(1)
					}
					return nil
				})
			}
		}()
	}
	mustImport(t, s, v2)
	stop.Store(true)
	wg.Wait()
	if mixed.Load() != 0 {
		t.Fatalf("%d reads saw a mix of old and new", mixed.Load())
	}
	if seenOld.Load() == 0 && seenNew.Load() == 0 {
		t.Fatal("readers read nothing")
	}
}

func TestRemoveUnknown(t *testing.T) {
	s := newStore(t)
	if _, err := s.Remove("org.example.nope"); !errors.Is(err, ErrUnknownBundle) {
		t.Fatalf("got %v", err)
	}
}
