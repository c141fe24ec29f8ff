package resolver

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// resigned returns data (a bundle file) with item 0 signed anew by keys
// over the very same manifest payload: the same release under another
// signature list, its body and artifacts untouched.
func resigned(t *testing.T, data []byte, keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	in, err := bundle.Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	obj, err := bundle.DecodeObject(in.SignedManifest, bundle.MediaTypeManifest)
	if err != nil {
		t.Fatal(err)
	}
	item, err := bundle.SignObject(bundle.MediaTypeManifest, obj.Payload, keys)
	if err != nil {
		t.Fatal(err)
	}
	return append(item, data[len(in.SignedManifest):]...)
}

// TestSameReleaseWithOtherSignaturesIsNotARollback
//
// Attack: the signature list of item 0 is covered by no signature, so one
// release (one signed manifest payload) exists as many files: the
// publisher's, one an officer co-signed later (`ampbundle sign`,
// docs/FORMAT.md §2), one with a throwaway key's signature added or a
// co-signature stripped. Whichever copy reaches a store first (a hostile
// mirror chooses) was installed, and every other copy of the very same
// release was then refused and audited as a `rollback` that never
// happened: a site holding the publisher's file could never take the
// co-signed release that sites requiring two keys need.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-8, as TRUST-19 for statements): a
// file that verifies under the store's policy and whose manifest payload
// is the installed one's is that release: `unchanged` (after its artifacts
// verify), audited import_unchanged, and the installed file's bytes stay
// what the store exports. A file of the same version with another payload
// is still a rollback; a copy no trusted key signed is still refused.
func TestSameReleaseWithOtherSignaturesIsNotARollback(t *testing.T) {
	publisher, officer, throwaway := sampleKey(t, "example-publisher"), testKeyN(7), testKeyN(9)
	published := sampleBytes(t, "translate")
	var cb bytes.Buffer
	if _, err := bundle.Cosign(&cb, bytes.NewReader(published), officer,
		bundle.CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	cosigned := cb.Bytes()
	for _, c := range []struct {
		name            string
		installed, file []byte
	}{
		{"co-signed after the publisher's", published, cosigned},
		{"publisher's after the co-signed", cosigned, published},
		{"a throwaway key's signature added", published, resigned(t, published, publisher, throwaway)},
		{"the very file", published, published},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			mustImport(t, s, c.installed)
			res, err := importBytes(t, s, c.file, ImportOptions{})
			if err != nil {
				t.Fatalf("the same release under another signature list was refused: %v", err)
			}
			if !res.Unchanged {
				t.Fatalf("got %+v, want unchanged", res)
			}
			if chk, err := s.CheckImport(bytes.NewReader(c.file)); err != nil || !chk.Unchanged {
				t.Fatalf("CheckImport: %+v, %v; want unchanged", chk, err)
			}
			var out bytes.Buffer
			if err := s.Export("org.example.translate", &out); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), c.installed) {
				t.Fatal("the export is no longer the installed file")
			}
			entries, err := s.Audit()
			if err != nil {
				t.Fatal(err)
			}
			last := entries[len(entries)-1]
			if last.Action != "import_unchanged" || last.Verdict != "unchanged" {
				t.Fatalf("audited %s/%s, want import_unchanged/unchanged", last.Action, last.Verdict)
			}
		})
	}

	t.Run("same version, another payload", func(t *testing.T) {
		s := newStore(t)
		mustImport(t, s, published)
		in, err := bundle.Inspect(bytes.NewReader(published), 0)
		if err != nil {
			t.Fatal(err)
		}
		other := variant(t, in.Manifest.Version, func(d *bundle.Draft) { d.CreatedAt = d.CreatedAt.Add(-time.Minute) })
		if _, err := importBytes(t, s, other, ImportOptions{}); !errors.Is(err, ErrRollback) {
			t.Fatalf("got %v, want rollback", err)
		}
	})
	t.Run("the same payload signed by no trusted key", func(t *testing.T) {
		s := newStore(t)
		mustImport(t, s, published)
		if _, err := importBytes(t, s, resigned(t, published, throwaway), ImportOptions{}); !errors.Is(err, bundle.ErrUntrustedKey) {
			t.Fatalf("got %v, want untrusted_key", err)
		}
	})
}
