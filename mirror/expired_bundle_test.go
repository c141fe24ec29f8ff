package mirror

// Threat: the mirror distributes a bundle its own store refuses as
// expired (5002 bundle_expired) to every site that syncs from it, because
// only a refresh that could read the store acted on the expiry.

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// expiringEchoBundle signs org.example.echo 1 (capability 1.1.0),
// expiring at exp.
func expiringEchoBundle(t testing.TB, exp time.Time) []byte {
	t.Helper()
	version, err := capability.ParseVersion("1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.example.echo", Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), ExpiresAt: &exp,
		Artifacts: []bundle.Source{bundle.BytesSource("echo.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))},
		Capabilities: []capability.Descriptor{{Name: "org.example.echo", Version: version,
			InputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}}},
	}, []ed25519.PrivateKey{testKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return file.Bytes()
}

// TestExpiredBundleIsNotServedWhileTheStoreCannotBeRead: the snapshot
// knew when its first bundle expires (validUntil), but only a refresh that
// could read the store acted on it: while the store could not be opened
// (an import holding the bbolt lock, a store gone), and between
// refreshes, the mirror went on listing and serving a bundle its store
// refuses as expired. Each request now checks the clock: past a bundle's
// expiry, the bundle, its capabilities' files and their index entries are
// no longer served, and a bundle that does not expire still is.
func TestExpiredBundleIsNotServedWhileTheStoreCannotBeRead(t *testing.T) {
	exp := testNow.Add(time.Hour)
	p := newStore(t, expiringEchoBundle(t, exp), labelledSchemaBundle(t, bundle.MediaTypeSchema))
	var now atomic.Pointer[time.Time]
	now.Store(&testNow)
	clock := func() time.Time { return *now.Load() }
	var broken atomic.Bool
	m, ts := startMirror(t, p, func(o *Options) {
		o.Now = clock
		o.Open = func() (Source, error) {
			if broken.Load() {
				return nil, errors.New("the store is locked by an import")
			}
			return resolver.Open(p, resolver.Options{ReadOnly: true, Now: clock})
		}
	})
	if ids, bs, ss := servedBundles(t, ts.URL); len(ids) != 2 || bs != 200 || ss != 200 {
		t.Fatalf("before its expiry: %v %d %d", ids, bs, ss)
	}
	v, _ := capability.ParseVersion("1.1.0")
	descriptor := ts.URL + CapabilityPath(capability.ID{Name: "org.example.echo", Version: v}, FileDescriptorJSON)

	// At the expiry instant, with the store unreadable.
	now.Store(&exp)
	broken.Store(true)
	if err := m.Refresh(); err == nil {
		t.Fatal("the refresh of a broken store succeeds")
	}
	ids, bs, ss := servedBundles(t, ts.URL)
	if bs == http.StatusOK || ss == http.StatusOK || !slices.Equal(ids, []string{"org.example.html"}) {
		t.Errorf("at its expiry, with the store unreadable: index lists %v, bundle %d, schema %d: "+
			"an expired bundle is distributed to every syncing site", ids, bs, ss)
	}
	if resp, _ := get(t, http.MethodGet, descriptor, nil); resp.StatusCode != http.StatusNotFound {
		t.Errorf("the expired bundle's descriptor: %d, want 404", resp.StatusCode)
	}
	if resp, _ := get(t, http.MethodGet, ts.URL+BundlesPrefix+"org.example.html", nil); resp.StatusCode != http.StatusOK {
		t.Errorf("a bundle that does not expire: %d, want 200", resp.StatusCode)
	}

	// The store readable again: the next refresh takes nothing back and
	// removes the expired bundle's file from the spool.
	broken.Store(false)
	if err := m.Refresh(); err != nil {
		t.Fatal(err)
	}
	if ids, bs, _ := servedBundles(t, ts.URL); bs != http.StatusNotFound || !slices.Equal(ids, []string{"org.example.html"}) {
		t.Errorf("after a refresh: index lists %v, bundle %d", ids, bs)
	}
	if n := len(globSpool(t, m)); n != 1 {
		t.Errorf("the spool holds %d bundle files, want 1 (the expired one's removed)", n)
	}
}

// TestConcurrentRequestsAtAnExpiryNeverGetTheExpiredBundle: requests
// racing past a bundle's expiry each trim the snapshot or take the one
// another trimmed; none gets the expired bundle, and the trimmed snapshot
// is the one served afterwards.
func TestConcurrentRequestsAtAnExpiryNeverGetTheExpiredBundle(t *testing.T) {
	exp := testNow.Add(time.Hour)
	p := newStore(t, expiringEchoBundle(t, exp))
	var now atomic.Pointer[time.Time]
	now.Store(&testNow)
	m, ts := startMirror(t, p, func(o *Options) { o.Now = func() time.Time { return *now.Load() } })
	before := m.cur.Load()
	later := exp.Add(time.Second)
	now.Store(&later)
	var wg sync.WaitGroup
	codes := make([]int, 16)
	for i := range codes {
		wg.Go(func() {
			resp, err := http.Get(ts.URL + BundlesPrefix + "org.example.echo")
			if err != nil {
				t.Error(err)
				return
			}
			resp.Body.Close()
			codes[i] = resp.StatusCode
		})
	}
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusNotFound {
			t.Errorf("request %d after the expiry: %d, want 404", i, c)
		}
	}
	if cur := m.cur.Load(); cur == before || !cur.trimmed || len(cur.bundles) != 0 {
		t.Errorf("the served snapshot is not the trimmed one: trimmed %v, %d bundles", cur.trimmed, len(cur.bundles))
	}
}
