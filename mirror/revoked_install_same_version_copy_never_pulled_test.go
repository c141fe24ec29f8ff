package mirror

// Threat: a capability stays failed closed at every syncing site for good.
// A site holds release R of a bundle signed only by the publisher's key K;
// K is revoked, an officer co-signs R, and the site's mirror serves the
// co-signed copy (the same bundle_id and version: BUNDLE-8 lets it
// replace a failed-closed install, MIRROR-20 made the mirror serve it).
// Sync applied the revocation (R fails closed), then saw the same version
// installed and reported it up_to_date without downloading the copy that
// stands: the site served 5002 bundle_revoked until a new version.
//
// Sync now fetches a listed copy of the installed version when the
// installed file is revoked (not when it is only stale or expired: a copy
// carries the same signed expiry and line) and lets the store decide; a
// copy the store refused is not downloaded again while the store's
// refusal stands (docs/SPEC-DECISIONS.md MIRROR-22).

import (
	"bytes"
	"crypto/ed25519"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// countBundleGets serves m, counting the GETs of bundle files.
func countBundleGets(t *testing.T, m *Server) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/bundles/") {
			n.Add(1)
		}
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts, &n
}

// officerKey is the key replaceWithinTheSecond co-signs with.
func officerKey() ed25519.PrivateKey {
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{95}, ed25519.SeedSize))
}

// syncItem syncs site from url once and returns the one bundle item of
// the report.
func syncItem(t *testing.T, site *resolver.Store, url string) SyncItem {
	t.Helper()
	rep, err := syncOnce(t, site, url, nil)
	return soleItem(t, rep, err)
}

// soleItem returns the one bundle item of rep.
func soleItem(t *testing.T, rep *SyncReport, err error) SyncItem {
	t.Helper()
	if err != nil || rep == nil || len(rep.Items) != 1 {
		t.Fatalf("sync: %+v, %v; want one bundle item", rep, err)
	}
	return rep.Items[0]
}

// TestSyncPullsTheSameVersionCopyThatStandsOverARevokedInstall: the
// mirror serves the co-signed copy of the installed release and the
// revocation of its publisher's key; the sync applies the revocation and
// then installs the copy (imported, previous_version its own version),
// so the bundle stands again. The next sync downloads nothing.
func TestSyncPullsTheSameVersionCopyThatStandsOverARevokedInstall(t *testing.T) {
	published := testBundle(t, 1)
	p := newStore(t, published)
	m, _ := startMirror(t, p, nil)
	cosigned := replaceWithinTheSecond(t, p, published)
	if err := m.Refresh(); err != nil {
		t.Fatal(err)
	}
	ts, gets := countBundleGets(t, m)
	site := agentStore(t, published)
	if err := site.TrustAdd("officer", officerKey().Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	rep, err := syncOnce(t, site, ts.URL, nil)
	if err == nil && (len(rep.Statements) != 1 || rep.Statements[0].Outcome != OutcomeImported) {
		t.Fatalf("the revocation was not applied: %+v", rep.Statements)
	}
	it := soleItem(t, rep, err)
	if it.Outcome != OutcomeImported || it.PreviousVersion != 1 || it.Version != 1 {
		t.Fatalf("the co-signed copy over the revoked install: %+v; want imported, previous_version 1", it)
	}
	var out bytes.Buffer
	if err := site.Export("org.example.echo", &out); err != nil || !bytes.Equal(out.Bytes(), cosigned) {
		t.Fatalf("the site holds %s (%v), not the co-signed copy",
			map[bool]string{true: "the revoked publisher-only file", false: "another file"}[bytes.Equal(out.Bytes(), published)], err)
	}
	bs, err := site.Bundles()
	if err != nil || len(bs) != 1 || bs[0].Revoked != "" {
		t.Fatalf("after the sync: %+v, %v; want the bundle standing", bs, err)
	}
	before := gets.Load()
	it = syncItem(t, site, ts.URL)
	if it.Outcome != OutcomeCurrent || gets.Load() != before {
		t.Fatalf("the next sync: %+v, %d bundle downloads; want up_to_date, none", it, gets.Load()-before)
	}
}

// TestSyncDoesNotDownloadAgainASameVersionCopyRefusedOverARevokedInstall:
// a mirror that still serves the publisher's own file (it has not
// applied the revocation the site applied) gets its head read and the file
// refused once — a refusal, not up_to_date: the bundle fails closed at the
// site — and not downloaded again while the refusal stands (at the same
// store generation).
func TestSyncDoesNotDownloadAgainASameVersionCopyRefusedOverARevokedInstall(t *testing.T) {
	published := testBundle(t, 1)
	m, _ := startMirror(t, newStore(t, published), nil)
	ts, gets := countBundleGets(t, m)
	site := agentStore(t, published)
	officer := officerKey()
	if err := site.TrustAdd("officer", officer.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if res, err := site.ApplyRevocation(signedRevocation(t, []string{amp.DIDKey(testKey.Public().(ed25519.PublicKey))}, nil, officer)); err != nil || len(res.FailedClosed) != 1 {
		t.Fatalf("revocation at the site: %+v, %v", res, err)
	}
	it := syncItem(t, site, ts.URL)
	if it.Outcome != OutcomeRefused || gets.Load() != 1 {
		t.Fatalf("the publisher-only file over the revoked install: %+v, %d downloads; want refused after one", it, gets.Load())
	}
	var out bytes.Buffer
	if err := site.Export("org.example.echo", &out); err != nil || !bytes.Equal(out.Bytes(), published) {
		t.Fatalf("the store changed: %v", err)
	}
	for run := 0; run < 2; run++ {
		it = syncItem(t, site, ts.URL)
		if it.Outcome != OutcomeRefused || !strings.Contains(it.Message, "at this store generation") || gets.Load() != 1 {
			t.Fatalf("run %d: %+v, %d downloads in all; want refused before, no download", run+2, it, gets.Load())
		}
	}
}

// TestSyncDoesNotDownloadASameVersionCopyOverAnExpiredRevokedInstall: the
// copy carries the installed file's signed expiry, so it cannot mend an
// expired install: up_to_date, nothing downloaded, on every run.
func TestSyncDoesNotDownloadASameVersionCopyOverAnExpiredRevokedInstall(t *testing.T) {
	exp := time.Date(2031, 1, 1, 0, 0, 0, 0, time.UTC) // after the mirror's and the sync's clock
	file := expiringEchoBundle(t, exp)
	m, _ := startMirror(t, newStore(t, file), nil)
	ts, gets := countBundleGets(t, m)
	p := newStore(t, file)
	later := exp.Add(time.Hour)
	site, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return later }})
	if err != nil {
		t.Fatal(err)
	}
	defer site.Close()
	officer := officerKey()
	if err := site.TrustAdd("officer", officer.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if res, err := site.ApplyRevocation(signedRevocation(t, []string{amp.DIDKey(testKey.Public().(ed25519.PublicKey))}, nil, officer)); err != nil || len(res.FailedClosed) != 1 {
		t.Fatalf("revocation at the site: %+v, %v", res, err)
	}
	if bs, err := site.Bundles(); err != nil || len(bs) != 1 || !bs[0].Expired || bs[0].Revoked == "" {
		t.Fatalf("the install: %+v, %v; want it expired and revoked", bs, err)
	}
	for run := 0; run < 2; run++ {
		if it := syncItem(t, site, ts.URL); it.Outcome != OutcomeCurrent || gets.Load() != 0 {
			t.Fatalf("run %d: %+v, %d downloads; want up_to_date, none", run+1, it, gets.Load())
		}
	}
}
