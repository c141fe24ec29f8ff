package resolver

import (
	"bytes"
	"crypto/ed25519"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
)

// withStoredForgedCosignature writes into s, as a build before TRUST-20
// did when it imported such a copy, the installed signed manifest of
// bundleID with officer's co-signature altered: the same payload, the
// publisher's genuine signature, and one more under the officer's kid that
// no key made. It returns the genuine co-signed file.
func withStoredForgedCosignature(t *testing.T, s *Store, published []byte, bundleID string, officer ed25519.PrivateKey) []byte {
	t.Helper()
	var cb bytes.Buffer
	if _, err := bundle.Cosign(&cb, bytes.NewReader(published), officer,
		bundle.CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	in, err := bundle.Inspect(bytes.NewReader(cb.Bytes()), 0)
	if err != nil {
		t.Fatal(err)
	}
	forged := bytes.Clone(in.SignedManifest)
	kid := didOfPriv(officer)
	for _, sig := range in.Signatures {
		if sig.KID != kid {
			continue
		}
		at := bytes.Index(forged, sig.Sig)
		if at < 0 {
			t.Fatal("the officer's signature bytes are not in the signed manifest")
		}
		forged[at] ^= 0x01 // one flipped bit: the encoding stays sound, the signature does not verify
	}
	if obj, err := bundle.DecodeObject(forged, bundle.MediaTypeManifest); err != nil || obj.VerifyAll() == nil {
		t.Fatalf("the forged manifest decodes (%v) and verifies: the test would prove nothing", err)
	}
	if err := s.db.Update(func(tx *bolt.Tx) error {
		rec, err := installedRecord(tx, bundleID)
		if err != nil {
			return err
		}
		rec.Signed = forged
		return bucket(tx, bBundles).Put([]byte(bundleID), encode(rec))
	}); err != nil {
		t.Fatal(err)
	}
	return cb.Bytes()
}

// TestForgedCosignatureKeptByAnEarlierBuildIsReportedAndReplaced
//
// Attack: before TRUST-20 a reader skipped the signatures of keys its
// policy did not trust, so a store installed a genuine bundle carrying a
// garbage co-signature under the kid of a key other sites trust (an
// officer). The store keeps that copy's signed manifest and relays it
// (export, mirror, OCI push): every site trusting the officer refuses it
// bad_signature. Nothing re-verified it: `ampbundle check` said the store
// was sound, export relayed it, and the genuine file of the very release
// was answered `unchanged`, so the forged copy stayed until the next
// version.
//
// Defence (docs/SPEC-DECISIONS.md TRUST-20, amended): check verifies every
// stored signed manifest as import does (every signature against the key
// its kid names) and names each that fails (kind "signature"); export
// refuses it bad_signature rather than relay it; the same release offered
// again, verified whole, replaces it (not unchanged, not a rollback),
// after which check is clean. Lookups keep serving it: the signatures that
// counted were verified at import.
func TestForgedCosignatureKeptByAnEarlierBuildIsReportedAndReplaced(t *testing.T) {
	s := newStore(t)
	published := sampleBytes(t, "translate")
	mustImport(t, s, published)
	cosigned := withStoredForgedCosignature(t, s, published, "org.example.translate", testKeyN(63))

	ps, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, p := range ps {
		if p.Kind == "signature" && strings.Contains(p.Message, "org.example.translate") && strings.Contains(p.Message, "bad_signature") {
			found = true
		}
	}
	if !found {
		t.Fatalf("check problems %+v, want a signature problem naming org.example.translate", ps)
	}
	if err := s.Export("org.example.translate", &bytes.Buffer{}); amp.NameOf(err) != bundle.ErrBadSignature {
		t.Fatalf("export of the forged copy: %v, want bad_signature (never relay a file other sites refuse)", err)
	}
	if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
		t.Fatalf("the release stopped being served: %v (its counting signatures were verified at import)", err)
	}
	// The publisher's genuine file of the same release replaces it.
	ir, err := importBytes(t, s, published, ImportOptions{})
	if err != nil {
		t.Fatalf("the genuine file of the installed release: %v", err)
	}
	if ir.Unchanged || ir.Downgrade || !ir.Replaced || ir.PreviousVersion != ir.Version {
		t.Fatalf("the genuine file over the forged install: %+v, want it replaced, neither unchanged nor a downgrade", ir)
	}
	var out bytes.Buffer
	if err := s.Export("org.example.translate", &out); err != nil || !bytes.Equal(out.Bytes(), published) {
		t.Fatalf("export after the replacement: %v (equal %v)", err, bytes.Equal(out.Bytes(), published))
	}
	// Once a verified file stands, copies are unchanged again (no swap by
	// arrival order).
	if ir, err := importBytes(t, s, cosigned, ImportOptions{}); err != nil || !ir.Unchanged {
		t.Fatalf("the co-signed copy after the replacement: %+v, %v; want unchanged", ir, err)
	}
}
