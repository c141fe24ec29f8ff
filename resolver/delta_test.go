package resolver

import (
	"bytes"
	"crypto/ed25519"
	"path/filepath"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
)

// deltaOf builds the translate sample at version with edit applied, as a
// delta against base (a bundle file), and as a full bundle.
func deltaOf(t testing.TB, base []byte, version uint64, edit func(d *bundle.Draft)) (delta, full []byte) {
	t.Helper()
	k := sampleKey(t, "example-publisher")
	load := func() *bundle.Draft {
		d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "translate"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(k)})
		if err != nil {
			t.Fatal(err)
		}
		d.Version = version
		if edit != nil {
			edit(d)
		}
		return d
	}
	in, err := bundle.Inspect(bytes.NewReader(base), 0)
	if err != nil {
		t.Fatal(err)
	}
	var db, fb bytes.Buffer
	if _, _, err := bundle.WriteDelta(&db, load(), []ed25519.PrivateKey{k}, in.SignedManifest, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := bundle.Write(&fb, load(), []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return db.Bytes(), fb.Bytes()
}

var changedSchema = []byte(`{"type":"string","minLength":1,"maxLength":100}`)

func changeOneSchema(d *bundle.Draft) { replaceArtifact(d, "schemas/common/text.json", changedSchema) }

func exportBytes(t *testing.T, s *Store, id string) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := s.Export(id, &b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestDeltaImportExportsTheFullBundle: a delta imported over its base gives
// the store a full import gives, and export writes the full bundle byte for
// byte (the same bytes a full build of the same source, key and time
// writes).
func TestDeltaImportExportsTheFullBundle(t *testing.T) {
	for _, skip := range []bool{false, true} {
		v1 := variant(t, 1, nil)
		delta, full := deltaOf(t, v1, 2, changeOneSchema)
		if len(delta) >= len(full) {
			t.Fatalf("delta of one changed schema is %d bytes, the full bundle %d", len(delta), len(full))
		}
		viaDelta, viaFull := newStore(t), newStore(t)
		mustImport(t, viaDelta, v1)
		mustImport(t, viaFull, v1)
		res, err := importBytes(t, viaDelta, delta, ImportOptions{SkipBaseRehash: skip})
		if err != nil {
			t.Fatal(err)
		}
		if res.Delta == nil || res.Delta.FromBase == 0 || res.Delta.BaseVersion != 1 || res.Delta.Rehashed == skip || res.NewBlobs != 1 || res.PreviousVersion != 1 {
			t.Fatalf("delta import result %+v %+v", res, res.Delta)
		}
		mustImport(t, viaFull, full)
		if got := exportBytes(t, viaDelta, "org.example.translate"); !bytes.Equal(got, full) {
			t.Fatal("export after a delta import differs from the full bundle")
		}
		// The audit logs differ: each records the file it read.
		if dumpBesidesAudit(t, viaDelta) != dumpBesidesAudit(t, viaFull) {
			t.Fatal("the store after a delta import differs from the store after the full import")
		}
		if problems, err := viaDelta.Check(); err != nil || len(problems) != 0 {
			t.Fatalf("check after delta import: %v %v", problems, err)
		}
		// Importing the delta again is a no-op.
		if res, err := importBytes(t, viaDelta, delta, ImportOptions{}); err != nil || !res.Unchanged {
			t.Fatalf("re-import of the delta: %+v %v", res, err)
		}
	}
}

// TestDeltaAgainstWrongBase: a delta over a store without its base, or
// with the base already replaced, is refused as delta_base_missing naming
// the base, and the store is left exactly as it was. (Another manifest of
// the base version is the base if it lists every omitted artifact with the
// same bytes, BUNDLE-21: TestDeltaOverAnotherPayloadOfItsBaseVersion.)
func TestDeltaAgainstWrongBase(t *testing.T) {
	v1 := variant(t, 1, nil)
	delta, _ := deltaOf(t, v1, 3, changeOneSchema)
	v2 := variant(t, 2, nil)
	cases := []struct {
		name    string
		install [][]byte
	}{
		{"empty store", nil},
		{"base already replaced by a newer version", [][]byte{v1, v2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			for _, b := range c.install {
				mustImport(t, s, b)
			}
			before := dumpBesidesAudit(t, s) // a refusal is audited
			_, err := importBytes(t, s, delta, ImportOptions{})
			expectName(t, err, bundle.ErrDeltaBaseMissing)
			if !bytes.Contains([]byte(err.Error()), []byte("org.example.translate version 1")) {
				t.Fatalf("error does not name the base: %v", err)
			}
			if dumpBesidesAudit(t, s) != before {
				t.Fatal("a refused delta changed the store")
			}
		})
	}
}

// TestDeltaTamperedBaseBlob: an omitted artifact is taken from the base's
// blob only after it is re-hashed against the full signed manifest; an
// altered store blob fails the import and changes nothing.
func TestDeltaTamperedBaseBlob(t *testing.T) {
	v1 := variant(t, 1, nil)
	delta, _ := deltaOf(t, v1, 2, changeOneSchema)
	s := newStore(t)
	mustImport(t, s, v1)
	blob := BlobKey("sha-256", sha(mustRead(t, "translate/schemas/common/language.json")))
	flip := func() {
		if err := s.db.Update(func(tx *bolt.Tx) error {
			data := append([]byte(nil), getBlob(tx, []byte(blob))...)
			data[0] ^= 1
			return bucket(tx, bBlobs).Bucket([]byte(blob)).Put([]byte(blobData), data)
		}); err != nil {
			t.Fatal(err)
		}
	}
	flip()
	before := dumpBesidesAudit(t, s) // a refusal is audited
	_, err := importBytes(t, s, delta, ImportOptions{})
	expectName(t, err, bundle.ErrHashMismatch)
	if dumpBesidesAudit(t, s) != before {
		t.Fatal("a refused delta changed the store")
	}
	flip() // restored: the store check at cleanup passes
	mustImport(t, s, delta)
}
