package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// servedBundles returns the bundle ids the mirror's index lists, and the
// status of GET /bundles/org.example.echo and of its input schema.
func servedBundles(t *testing.T, url string) (ids []string, bundleStatus, schemaStatus int) {
	t.Helper()
	resp, body := get(t, "GET", url+IndexPath, nil)
	if resp.StatusCode != 200 {
		t.Fatalf("index: %d %s", resp.StatusCode, body)
	}
	var ix Index
	if err := json.Unmarshal(body, &ix); err != nil {
		t.Fatal(err)
	}
	for _, b := range ix.Bundles {
		ids = append(ids, b.BundleID)
	}
	resp, _ = get(t, "GET", url+BundlesPrefix+"org.example.echo", nil)
	bundleStatus = resp.StatusCode
	version, err := capability.ParseVersion("1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	id := capability.ID{Name: "org.example.echo", Version: version}
	resp, _ = get(t, "GET", url+CapabilityPath(id, FileInputSchema), nil)
	return ids, bundleStatus, resp.StatusCode
}

// TestRevokedBundleIsNotDistributedByTheMirror: once the station's store
// has revoked a bundle (it fails closed there, 5002 bundle_revoked), its
// mirror stops listing and serving it, so that no host inside the site
// receives it from the mirror, whatever that host knows of the revocation.
func TestRevokedBundleIsNotDistributedByTheMirror(t *testing.T) {
	p := newStore(t, testBundle(t, 1))
	m, ts := startMirror(t, p, nil)
	if ids, bs, ss := servedBundles(t, ts.URL); len(ids) != 1 || bs != 200 || ss != 200 {
		t.Fatalf("before the revocation: %v %d %d", ids, bs, ss)
	}
	applyStatements(t, p, revokedEcho1(t, testKey))
	if err := m.Refresh(); err != nil {
		t.Fatal(err)
	}
	if ids, bs, ss := servedBundles(t, ts.URL); len(ids) != 0 || bs != 404 || ss != 404 {
		t.Fatalf("after the revocation: index %v, bundle %d, schema %d: still served", ids, bs, ss)
	}
	if n := len(globSpool(t, m)); n != 0 {
		t.Fatalf("%d bundle files left in the spool", n)
	}
}

// TestExpiredBundleIsNotDistributedByTheMirror: a bundle that expires
// while the mirror serves it is dropped at the next refresh, although the
// store's generation did not change; a bundle that does not expire stays.
func TestExpiredBundleIsNotDistributedByTheMirror(t *testing.T) {
	exp := testNow.Add(time.Hour)
	version, err := capability.ParseVersion("1.1.0")
	if err != nil {
		t.Fatal(err)
	}
	schema := []byte(`{"type":"object"}`)
	var file bytes.Buffer
	if _, err := bundle.Write(&file, &bundle.Draft{
		BundleID: "org.example.echo", Version: 1, CreatedAt: time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC), ExpiresAt: &exp,
		Artifacts: []bundle.Source{bundle.BytesSource("echo.json", bundle.MediaTypeSchema, schema)},
		Capabilities: []capability.Descriptor{{Name: "org.example.echo", Version: version,
			InputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}, OutputSchema: capability.SchemaRef{ArtifactKey: "echo.json"}}},
	}, []ed25519.PrivateKey{testKey}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "store.db")
	var now atomic.Pointer[time.Time]
	now.Store(&testNow)
	clock := func() time.Time { return *now.Load() }
	s, err := resolver.Open(p, resolver.Options{Create: true, Now: clock})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.TrustAdd("example", testKey.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(file.Bytes()), resolver.ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	m, ts := startMirror(t, p, func(o *Options) {
		o.Now = clock
		o.Open = func() (Source, error) { return resolver.Open(p, resolver.Options{ReadOnly: true, Now: clock}) }
	})
	gen := m.Generation()
	if ids, bs, ss := servedBundles(t, ts.URL); len(ids) != 1 || bs != 200 || ss != 200 {
		t.Fatalf("before its expiry: %v %d %d", ids, bs, ss)
	}
	later := exp.Add(time.Second)
	now.Store(&later)
	if err := m.Refresh(); err != nil {
		t.Fatal(err)
	}
	if ids, bs, ss := servedBundles(t, ts.URL); len(ids) != 0 || bs != 404 || ss != 404 {
		t.Fatalf("after its expiry: index %v, bundle %d, schema %d: still served", ids, bs, ss)
	}
	if m.Generation() != gen {
		t.Fatalf("generation %d, want %d (the store did not change)", m.Generation(), gen)
	}
}

// manyBundles is a Source listing n bundles that exports nothing.
type manyBundles struct {
	Source
	n int
}

func (m manyBundles) Generation() uint64 { return 1 }
func (m manyBundles) Bundles() ([]resolver.Bundle, error) {
	out := make([]resolver.Bundle, m.n)
	for i := range out {
		out[i] = resolver.Bundle{BundleID: "org.example.b" + strconv.Itoa(i), Version: 1}
	}
	return out, nil
}
func (m manyBundles) Export(string, io.Writer) error { return errors.New("not exported in this test") }
func (m manyBundles) Close() error                   { return nil }

// TestMirrorDoesNotServeAnIndexSyncRefuses: a store with more bundles
// than a syncing store accepts in one index is not snapshotted (nothing is
// exported for it): New fails naming the cap, rather than serving an index
// every client refuses as a whole.
func TestMirrorDoesNotServeAnIndexSyncRefuses(t *testing.T) {
	_, err := New(Options{Open: func() (Source, error) { return manyBundles{n: MaxIndexBundles + 1}, nil },
		SpoolDir: filepath.Join(t.TempDir(), "spool")})
	if amp.NameOf(err) != ErrMisconfigured || !strings.Contains(err.Error(), strconv.Itoa(MaxIndexBundles)) {
		t.Fatalf("a store of %d bundles: %v, want %s naming the cap", MaxIndexBundles+1, err, ErrMisconfigured)
	}
}
