//go:build unix

package main

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agh"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/keyfile"
	"github.com/ampbundle/ampbundle/resolver"
)

// manyCapabilityBundle signs, with the example publisher's TEST-ONLY key,
// bundle id holding n capabilities id.c00000..:1.0.0 sharing one schema,
// expiring at expires when it is not zero.
func manyCapabilityBundle(t *testing.T, id string, n int, created, expires time.Time) []byte {
	t.Helper()
	keys, err := keyfile.ParsePrivate(sampleFile(t, "keys/TEST-ONLY-example-publisher.key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	d := &bundle.Draft{BundleID: id, Version: 1, CreatedAt: created,
		Artifacts: []bundle.Source{bundle.BytesSource("s.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))}}
	if !expires.IsZero() {
		d.ExpiresAt = &expires
	}
	v, err := capability.ParseVersion("1.0.0")
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		d.Capabilities = append(d.Capabilities, capability.Descriptor{Name: fmt.Sprintf("%s.c%05d", id, i), Version: v,
			InputSchema: capability.SchemaRef{ArtifactKey: "s.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "s.json"}})
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, d, []ed25519.PrivateKey{keys.Ed25519}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// aghStore is a store trusting the example publisher, on clock now, and
// the --agh routes of an agent serving it (mountDiscovery).
func aghStore(t *testing.T, now func() time.Time) (*resolver.Store, *http.ServeMux) {
	t.Helper()
	s, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Create: true, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	pub, err := keyfile.ParsePublicPEM(sampleFile(t, "keys/TEST-ONLY-example-publisher.pub.pem"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", pub, []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	keys, err := keyfile.ParsePrivate(sampleFile(t, "keys/TEST-ONLY-translator-agent.key.pem"))
	if err != nil {
		t.Fatal(err)
	}
	id, err := keys.Identity("")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	if err := mountDiscovery(mux, true, &serveConfig{}, s, id); err != nil {
		t.Fatal(err)
	}
	return s, mux
}

func importBundle(t *testing.T, s *resolver.Store, file []byte) {
	t.Helper()
	if _, err := s.Import(context.Background(), bytes.NewReader(file), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
}

func aghGet(mux http.Handler, path string) int {
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	return rec.Code
}

// TestAGHRequestOfAnUnchangedStoreDoesNotRebuildTheCatalogProjection:
// every AGH request projected the whole store's catalog again
// (agh.FromCatalog: a map and three JSON encodings a capability) before
// the handler looked at what was asked. With 2,000 capabilities an
// anonymous GET of a capability that does not exist cost about 4.6 MiB
// (23 MiB at one bundle's 10,000), as many at once as the listener lets
// connections and HTTP/2 streams in. The projection is built once per
// catalog the store returns (CLI-60). (A whole peer card or catalog is
// still encoded for its request: its cost is the answer's, bounded by
// AGH-16.)
func TestAGHRequestOfAnUnchangedStoreDoesNotRebuildTheCatalogProjection(t *testing.T) {
	now := testNow()
	s, mux := aghStore(t, func() time.Time { return now })
	importBundle(t, s, manyCapabilityBundle(t, "org.example.many", 2000, now.Add(-time.Hour), time.Time{}))
	paths := []string{
		agh.CapabilityPrefix + "org.example.nope:1.0.0",
		agh.CapabilityPrefix + "org.example.many.c00001:1.0.0",
		agh.CatalogPath + "?id=org.example.many.c00001:1.0.0",
	}
	aghGet(mux, agh.PeerCardPath) // the first request builds the projection
	const requests, perRequest = 20, 256 << 10
	for _, p := range paths {
		if got := testalloc.LeastPerRun(requests, func() { aghGet(mux, p) }); got > perRequest {
			t.Errorf("GET %s of an unchanged store of 2,000 capabilities allocates %d KiB a request, over %d KiB: the catalog's projection is built again", p, got>>10, perRequest>>10)
		}
	}
}

// TestAGHProjectionFollowsTheStoresCatalog: the projection kept between
// requests is the store's current catalog's, whatever made it change: an
// import (a new generation) and a bundle's expiry (the same generation:
// a projection kept per generation would go on offering the expired
// bundle's capabilities), also under requests racing the change.
func TestAGHProjectionFollowsTheStoresCatalog(t *testing.T) {
	var mu sync.Mutex
	now := testNow()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	s, mux := aghStore(t, clock)
	importBundle(t, s, manyCapabilityBundle(t, "org.example.short", 3, now.Add(-time.Hour), now.Add(time.Hour)))
	short, later := agh.CapabilityPrefix+"org.example.short.c00001:1.0.0", agh.CapabilityPrefix+"org.example.later.c00002:1.0.0"
	steps := []struct {
		name   string
		change func()
		want   map[string]int
	}{
		{"first", func() {}, map[string]int{short: 200, later: 404}},
		{"import", func() {
			importBundle(t, s, manyCapabilityBundle(t, "org.example.later", 3, now.Add(-time.Hour), time.Time{}))
		}, map[string]int{short: 200, later: 200}},
		{"expiry", func() { mu.Lock(); now = now.Add(2 * time.Hour); mu.Unlock() }, map[string]int{short: 404, later: 200}},
	}
	for _, st := range steps {
		var wg sync.WaitGroup
		for range 4 { // requests racing the change
			wg.Go(func() { aghGet(mux, short); aghGet(mux, later) })
		}
		st.change()
		wg.Wait()
		for p, want := range st.want {
			if got := aghGet(mux, p); got != want {
				t.Errorf("after %s: GET %s = %d, want %d", st.name, p, got, want)
			}
		}
	}
}
