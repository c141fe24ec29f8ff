package resolver

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
)

// translatorDID is the DID the translate sample documents
// (testdata/bundles/translate/dids/translator.json).
const translatorDID = "did:web:translator.example.org"

// TestCheckNamesAStoredDIDDocumentThatNoLongerParses
//
// Threat: AMP-28 made a DID document whose verification methods lack a
// controller unparseable. A bundle an older build installed with such a
// document stays installed and check called the store sound, but every
// ResolveDID of it fails closed 3001 invalid_did_document: the operator
// learns it from a refused peer, and /readyz stays ready.
//
// Defence (docs/SPEC-DECISIONS.md STORE-3): check parses every stored DID
// document whose bytes are sound as ResolveDID does and names each that
// fails (kind "did_document_invalid"); a document that parses is not
// named.
func TestCheckNamesAStoredDIDDocumentThatNoLongerParses(t *testing.T) {
	good := mustRead(t, "translate/dids/translator.json")
	cases := []struct {
		name    string
		doc     []byte
		refused bool
	}{
		{"methods without a controller", bytes.ReplaceAll(good, []byte(`"controller": "did:web:translator.example.org",`), nil), true},
		{"a document of another did", bytes.ReplaceAll(good, []byte(`"id": "did:web:translator.example.org"`), []byte(`"id": "did:web:other.example.org"`)), true},
		{"a document that parses", append(bytes.Clone(good), ' '), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if bytes.Equal(tc.doc, good) {
				t.Fatal("test setup: the document is unchanged")
			}
			s := storeAt(t)
			t.Cleanup(func() { s.Close() })
			mustImport(t, s, sampleBytes(t, "translate"))
			withInstalledDIDDocument(t, s, tc.doc)
			_, rerr := s.ResolveDID(context.Background(), translatorDID)
			if tc.refused == (rerr == nil) {
				t.Fatalf("test setup: ResolveDID %v, want refused=%v", rerr, tc.refused)
			}
			ps, err := s.Check()
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, p := range ps {
				kinds = append(kinds, p.Kind)
			}
			want := []string(nil)
			if tc.refused {
				want = []string{ProblemDIDDocumentInvalid}
			}
			if !slices.Equal(kinds, want) {
				t.Fatalf("ResolveDID: %v; check problems %+v, want kinds %v", rerr, ps, want)
			}
			if tc.refused && !strings.Contains(ps[0].Message, "org.example.translate") {
				t.Fatalf("problem %q does not name the bundle", ps[0].Message)
			}
		})
	}
}

// withInstalledDIDDocument makes s hold what an older build wrote when it
// imported the translate sample with doc as its DID document: the signed
// manifest of that bundle (signed by its publisher), the document's blob,
// its index entry and reference counts. Nothing of the current import's
// checks is run on doc.
func withInstalledDIDDocument(t *testing.T, s *Store, doc []byte) {
	t.Helper()
	const key = "dids/translator.json"
	in, err := bundle.Inspect(bytes.NewReader(variant(t, 1, func(d *bundle.Draft) { replaceArtifact(d, key, doc) })), 0)
	if err != nil {
		t.Fatal(err)
	}
	a, ok := in.Manifest.Artifact(key)
	if !ok {
		t.Fatal("test setup: the variant has no DID document")
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		rec, err := installedRecord(tx, "org.example.translate")
		if err != nil {
			return err
		}
		rec.Signed = in.SignedManifest
		if err := bucket(tx, bBundles).Put([]byte(rec.BundleID), encode(rec)); err != nil {
			return err
		}
		ik := key2(rec.BundleID, key)
		var ir indexRecord
		if err := decode(bucket(tx, bIndex).Get(ik), &ir); err != nil {
			return err
		}
		refs := bucket(tx, bBlobRefs)
		if n := getU64(refs.Get([]byte(ir.Blob))); n > 1 {
			if err := refs.Put([]byte(ir.Blob), u64(n-1)); err != nil {
				return err
			}
		} else if err := errors.Join(refs.Delete([]byte(ir.Blob)), deleteBlob(tx, []byte(ir.Blob))); err != nil {
			return err
		}
		ir.Blob, ir.Size = BlobKey(a.HashAlg, a.Hash), a.Size
		if err := errors.Join(putBlob(tx, []byte(ir.Blob), doc), refs.Put([]byte(ir.Blob), u64(1))); err != nil {
			return err
		}
		return bucket(tx, bIndex).Put(ik, encode(ir))
	}); err != nil {
		t.Fatal(err)
	}
}
