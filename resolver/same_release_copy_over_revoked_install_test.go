package resolver

import (
	"bytes"
	"crypto/sha256"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// signedManifestSum returns the SHA-256 of a bundle file's signed
// manifest (item 0).
func signedManifestSum(t *testing.T, data []byte) []byte {
	t.Helper()
	in, err := bundle.Inspect(bytes.NewReader(data), 0)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(in.SignedManifest)
	return sum[:]
}

// TestSameReleaseCopyThatStandsCannotReplaceARevokedInstall
//
// Attack: the same release under other signatures was answered
// `unchanged` before any other judgement, from the payload alone, keeping
// the installed file. When the installed file had failed closed (its only
// counting signer's key was revoked, TRUST-3) and the operator imported
// the co-signed copy of that very release, whose officer signature still
// meets the policy, the import reported success ("unchanged") and the
// bundle stayed revoked; even --allow-downgrade was answered unchanged, so
// the copy that stands could never be installed short of `rm` and a
// downgrade import. The answer was also false: what is installed is not
// served.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-8): the same release counts as
// unchanged only over an installed file that is not revoked; over a
// revoked one the copy, verified under the policy now, replaces it (not a
// rollback, with or without --allow-downgrade), audited `import` with
// previous_version its own version and the copy's manifest SHA-256, and
// is served and exported. The publisher's own file, signed by the revoked
// key alone, still cannot mend it; the copy offered again is unchanged.
func TestSameReleaseCopyThatStandsCannotReplaceARevokedInstall(t *testing.T) {
	publisher, officer := sampleKey(t, "example-publisher"), testKeyN(52)
	published := sampleBytes(t, "translate")
	var cb bytes.Buffer
	if _, err := bundle.Cosign(&cb, bytes.NewReader(published), officer,
		bundle.CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	copied := cb.Bytes()
	for _, c := range []struct {
		name string
		opts ImportOptions
	}{{"plain import", ImportOptions{}}, {"allow downgrade", ImportOptions{AllowDowngrade: true}}} {
		opts := c.opts
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			if err := s.TrustAdd("officer", pub(officer), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			mustImport(t, s, published)
			res, err := s.ApplyRevocation(revocation(t, "org.example", []string{didOfPriv(publisher)}, nil, publisher))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.FailedClosed) != 1 {
				t.Fatalf("revocation result %+v, want the publisher-only install failed closed", res)
			}
			if ir, err := importBytes(t, s, published, opts); err == nil {
				t.Fatalf("the publisher's file, signed by the revoked key alone, was accepted: %+v", ir)
			}
			ir, err := importBytes(t, s, copied, opts)
			if err != nil {
				t.Fatalf("the co-signed copy (allow downgrade %v): %v", opts.AllowDowngrade, err)
			}
			if ir.Unchanged || ir.Downgrade || ir.PreviousVersion != ir.Version {
				t.Fatalf("import of the co-signed copy over the revoked install: %+v, want a replacement of version %d, neither unchanged nor a downgrade", ir, ir.Version)
			}
			if _, err := s.Resolve(descriptorRef(t, s)); err != nil {
				t.Fatalf("after importing a copy that meets the policy, the release is still not served: %v", err)
			}
			var out bytes.Buffer
			if err := s.Export("org.example.translate", &out); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), copied) {
				t.Fatal("the export is not the copy that replaced the revoked file")
			}
			e := lastAudit(t, s)
			if e.Action != "import" || e.PreviousVersion != e.Version || !bytes.Equal(e.ManifestSHA256, signedManifestSum(t, copied)) {
				t.Fatalf("audited %+v, want import of the copy's manifest with previous_version %d", e, ir.Version)
			}
			if ir, err := importBytes(t, s, copied, opts); err != nil || !ir.Unchanged {
				t.Fatalf("the copy offered again: %+v, %v; want unchanged", ir, err)
			}
		})
	}
}

// TestUnchangedImportAuditsTheOfferedManifestNotTheKeptOne
//
// Attack (audit): an unchanged import keeps the installed file, but its
// audit entry recorded the offered copy's manifest SHA-256: an auditor
// matching the entry to what the store holds (and exports, and relays)
// found a manifest that was never installed, and could not tell which
// copy was kept.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-8): import_unchanged records the
// installed (kept) file's manifest SHA-256; file_sha256 stays the offered
// file's.
func TestUnchangedImportAuditsTheOfferedManifestNotTheKeptOne(t *testing.T) {
	officer := testKeyN(54)
	published := sampleBytes(t, "translate")
	var cb bytes.Buffer
	if _, err := bundle.Cosign(&cb, bytes.NewReader(published), officer,
		bundle.CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	s := newStore(t)
	mustImport(t, s, published)
	if ir, err := importBytes(t, s, cb.Bytes(), ImportOptions{}); err != nil || !ir.Unchanged {
		t.Fatalf("the co-signed copy: %+v, %v; want unchanged", ir, err)
	}
	e := lastAudit(t, s)
	file := sha256.Sum256(cb.Bytes())
	if e.Action != "import_unchanged" || !bytes.Equal(e.ManifestSHA256, signedManifestSum(t, published)) || !bytes.Equal(e.FileSHA256, file[:]) {
		t.Fatalf("audited %s manifest %x file %x; want import_unchanged of the kept manifest %x, the offered file %x",
			e.Action, e.ManifestSHA256, e.FileSHA256, signedManifestSum(t, published), file[:])
	}
}
