package resolver

import (
	"bytes"
	"encoding/hex"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestCopyReplacingAnInstallWithinOneSecondIsListedAsAnotherFile
//
// Attack: a copy of the same release replacing the installed file
// (BUNDLE-8: a co-signed copy over an install whose only signer was
// revoked) keeps bundle_id and version, and, within the second of the
// first import, imported_at too: Bundles listed the replaced and the
// replacing file alike, and what cached an exported file by that listing
// (the mirror, MIRROR-20) kept serving the revoked one.
//
// Defence: each listed bundle carries the SHA-256 of its stored signed
// manifest (the one the audit entry of its import names), which is the
// new copy's as soon as it replaced the old.
func TestCopyReplacingAnInstallWithinOneSecondIsListedAsAnotherFile(t *testing.T) {
	publisher, officer := sampleKey(t, "example-publisher"), testKeyN(53)
	published := sampleBytes(t, "translate")
	var cb bytes.Buffer
	if _, err := bundle.Cosign(&cb, bytes.NewReader(published), officer,
		bundle.CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	s := newStore(t) // a clock that stays in one second
	if err := s.TrustAdd("officer", pub(officer), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, published)
	listed := func() Bundle {
		t.Helper()
		bs, err := s.Bundles()
		if err != nil || len(bs) != 1 {
			t.Fatalf("Bundles: %v, %v; want the one bundle", bs, err)
		}
		return bs[0]
	}
	before := listed()
	if want := hex.EncodeToString(signedManifestSum(t, published)); before.ManifestSHA256 != want {
		t.Fatalf("manifest_sha256 of the publisher's file: %q, want %q", before.ManifestSHA256, want)
	}
	if _, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(publisher)}, nil, publisher)); err != nil {
		t.Fatal(err)
	}
	if ir, err := importBytes(t, s, cb.Bytes(), ImportOptions{}); err != nil || !ir.Replaced {
		t.Fatalf("the co-signed copy over the revoked install: %+v, %v; want it replaced", ir, err)
	}
	after := listed()
	if after.Version != before.Version || after.ImportedAt != before.ImportedAt {
		t.Fatalf("the test wants the replacement within the same second of the same version: %+v, then %+v", before, after)
	}
	if want := hex.EncodeToString(signedManifestSum(t, cb.Bytes())); after.ManifestSHA256 != want {
		t.Fatalf("after the replacement manifest_sha256 is %q (the publisher's file: %v), want the copy's %q",
			after.ManifestSHA256, after.ManifestSHA256 == before.ManifestSHA256, want)
	}
}
