package mirror

// Threat: a site pays a whole download for every revoked install at each
// store change, for a copy its store is sure to refuse. A key K signed the
// installed release R of a large bundle; K is revoked (or trust rm
// --fail-closed), and the site's mirror has not caught up: it still
// lists R, the very file installed (or a hostile mirror lists, for each
// revoked install, a fresh file of its version signed by a key of its
// own). Sync (MIRROR-22) downloads the whole file before the store refuses
// it as signed by keys it no longer trusts; its refusal record spares the
// download only at the same store generation within a day, so each store
// change (any import, statement or trust act) costs the site every
// revoked install's whole file again, up to MaxBundleBytes each, and the
// fresh-file mirror costs it every run. Sync holds the store's trust: the
// head of the file (its signed manifest) says the copy cannot stand.
// Now a copy over a revoked install whose head the store's trust refuses
// is refused after its head, not downloaded whole nor offered
// (docs/SPEC-DECISIONS.md MIRROR-22, amended).

import (
	"bytes"
	"crypto/ed25519"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// largeEchoBundle is org.example.echo version 1 signed by testKey, with
// an unreferenced artifact of size bytes.
func largeEchoBundle(t *testing.T, size int) []byte {
	t.Helper()
	return largeEchoBundleBy(t, size, testKey, 'b')
}

// largeEchoBundleBy is largeEchoBundle signed by key, its artifact of
// fill bytes (another fill, another file).
func largeEchoBundleBy(t *testing.T, size int, key ed25519.PrivateKey, fill byte) []byte {
	t.Helper()
	version, err := capability.ParseVersion("1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	schema := []byte(`{"type":"object","required":["text"],"title":"echo v1"}`)
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.example.echo", Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC),
		Artifacts: []bundle.Source{bundle.BytesSource("echo.json", bundle.MediaTypeSchema, schema),
			bundle.BytesSource("blob.bin", "application/octet-stream", bytes.Repeat([]byte{fill}, size))},
		Capabilities: []capability.Descriptor{{Name: "org.example.echo", Version: version,
			InputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}}},
	}, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestRevokedInstallCopyDownloadedWholeAtEachStoreChange: over an install
// whose only signer the site revoked, a mirror lists the installed file
// itself (4 MiB), or a hostile one a fresh file of its version signed by
// its own key on every run. Each run, after a store change too, reads the
// head only (well under 1 MiB) and reports the copy refused.
func TestRevokedInstallCopyDownloadedWholeAtEachStoreChange(t *testing.T) {
	const size = 4 << 20
	hostile := ownKey(113) // the mirror's own
	published := largeEchoBundle(t, size)
	for _, tc := range []struct {
		name string
		// listed is the mirror a run syncs from.
		listed func(run int) *countBundleBytes
		want   amp.ErrName
	}{
		{"the revoked file itself", func(int) *countBundleBytes { return stationOf(t, []ed25519.PrivateKey{testKey}, published) }, bundle.ErrUntrustedKey},
		{"a fresh file each run signed by the mirror's key", func(run int) *countBundleBytes {
			return stationOf(t, []ed25519.PrivateKey{hostile}, largeEchoBundleBy(t, size, hostile, byte('c'+run)))
		}, bundle.ErrUntrustedKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := agentStore(t, published)
			officer := officerKey()
			if err := site.TrustAdd("officer", officer.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			if res, err := site.ApplyRevocation(signedRevocation(t, []string{amp.DIDKey(testKey.Public().(ed25519.PublicKey))}, nil, officer)); err != nil || len(res.FailedClosed) != 1 {
				t.Fatalf("revocation at the site: %+v, %v", res, err)
			}
			for run := 0; run < 2; run++ {
				if run > 0 { // a store change: another key trusted
					other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(40 + run)}, ed25519.SeedSize))
					if err := site.TrustAdd("other", other.Public().(ed25519.PublicKey), []string{"org.other"}); err != nil {
						t.Fatal(err)
					}
				}
				cb := tc.listed(run)
				it := syncItem(t, site, urlOf(t, cb))
				if it.Outcome != OutcomeRefused || it.Error != string(tc.want) {
					t.Fatalf("run %d: %+v; want refused %s (the bundle fails closed)", run+1, it, tc.want)
				}
				if got := cb.n.Load(); got > 1<<20 {
					t.Fatalf("run %d: %d bytes of bundle files downloaded for a copy the store's trust refuses by its head; want its head only", run+1, got)
				}
			}
			var out bytes.Buffer
			if err := site.Export("org.example.echo", &out); err != nil || !bytes.Equal(out.Bytes(), published) {
				t.Fatalf("the store changed: %v", err)
			}
		})
	}
}

// TestRevokedInstallCopyTheTrustPassesIsStillPulledWhole: the operator
// ran trust rm --fail-closed on the publisher's key, then trusted it
// again; the install stays failed closed, and the very file installed,
// which the mirror lists, now stands. Its head passes the store's trust,
// so it is downloaded and replaces the install: the head check refuses
// only what the keys trusted now do not sign.
func TestRevokedInstallCopyTheTrustPassesIsStillPulledWhole(t *testing.T) {
	published := largeEchoBundle(t, 1<<20)
	url := urlOf(t, stationOf(t, []ed25519.PrivateKey{testKey}, published))
	site := agentStore(t, published)
	if gone, err := site.TrustRemoveFailClosed("example"); err != nil || len(gone) != 1 {
		t.Fatalf("trust rm --fail-closed: %v, %v", gone, err)
	}
	if err := site.TrustAdd("example", testKey.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if bs, err := site.Bundles(); err != nil || len(bs) != 1 || bs[0].Revoked == "" {
		t.Fatalf("the install: %+v, %v; want it failed closed", bs, err)
	}
	if it := syncItem(t, site, url); it.Outcome != OutcomeImported || it.PreviousVersion != 1 {
		t.Fatalf("the file the trust passes over the revoked install: %+v; want imported, previous_version 1", it)
	}
	if bs, err := site.Bundles(); err != nil || len(bs) != 1 || bs[0].Revoked != "" {
		t.Fatalf("after the sync: %+v, %v; want the bundle standing", bs, err)
	}
}
