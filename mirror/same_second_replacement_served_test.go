package mirror

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/resolver"
)

// Attack (a replacement racing the mirror's export): the mirror reused a
// bundle file of its last snapshot while the bundle's key (bundle_id,
// version, imported_at, to the second) was unchanged. A same-release
// replacement (BUNDLE-8: a co-signed copy over an install whose only
// signer was revoked) keeps bundle_id and version; when the revocation
// and the replacement land between two refreshes within the second of
// the first import (one sync run applying statements and files; or a
// store clock that restarts from the same time), the key was unchanged
// and the mirror kept serving the old file, signed by the revoked key
// alone, as the installed release: every syncing site that applied the
// revocation fails it closed, and the copy that stands reached no one.
//
// The key of a served file now names the stored file itself (its signed
// manifest's hash, resolver.Bundle.ManifestSHA256), not the second it
// was imported (docs/SPEC-DECISIONS.md MIRROR-20).

// replaceWithinTheSecond revokes the publisher's key of the store at p
// and imports over its install a copy of published co-signed by an
// officer, by the clock of the first import (the same second); it
// returns the co-signed copy.
func replaceWithinTheSecond(t *testing.T, p string, published []byte) []byte {
	t.Helper()
	officer := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{95}, ed25519.SeedSize))
	var cb bytes.Buffer
	if _, err := bundle.Cosign(&cb, bytes.NewReader(published), officer,
		bundle.CosignOptions{Now: func() time.Time { return testNow }}); err != nil {
		t.Fatal(err)
	}
	s, err := resolver.Open(p, resolver.Options{Now: func() time.Time { return testNow }}) // the same second
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.TrustAdd("officer", officer.Public().(ed25519.PublicKey), []string{"org.example"}); err != nil {
		t.Fatal(err)
	}
	if res, err := s.ApplyRevocation(signedRevocation(t, []string{amp.DIDKey(testKey.Public().(ed25519.PublicKey))}, nil, officer)); err != nil || len(res.FailedClosed) != 1 {
		t.Fatalf("revocation of the publisher's key: %+v, %v", res, err)
	}
	if ir, err := s.Import(context.Background(), bytes.NewReader(cb.Bytes()), resolver.ImportOptions{}); err != nil || !ir.Replaced {
		t.Fatalf("the co-signed copy over the revoked install: %+v, %v; want it replaced", ir, err)
	}
	return cb.Bytes()
}

// TestCopyReplacingARevokedInstallWithinOneSecondIsServed: the refresh
// after the replacement serves the co-signed copy the store holds.
func TestCopyReplacingARevokedInstallWithinOneSecondIsServed(t *testing.T) {
	published := testBundle(t, 1)
	p := newStore(t, published)
	m, ts := startMirror(t, p, nil)
	if _, body := get(t, http.MethodGet, ts.URL+"/bundles/org.example.echo", nil); !bytes.Equal(body, published) {
		t.Fatal("the mirror does not serve the publisher's file to begin with")
	}
	cosigned := replaceWithinTheSecond(t, p, published)
	if err := m.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, http.MethodGet, ts.URL+"/bundles/org.example.echo", nil); !bytes.Equal(body, cosigned) {
		t.Fatalf("after the replacement the mirror serves %s, not the co-signed copy the store holds",
			map[bool]string{true: "the revoked publisher-only file", false: "another file"}[bytes.Equal(body, published)])
	}
}

// wrapSources has a mirror serve each Source it opens through wrap.
func wrapSources(wrap func(Source) Source) func(*Options) {
	return func(o *Options) {
		open := o.Open
		o.Open = func() (Source, error) {
			src, err := open()
			if err != nil {
				return nil, err
			}
			return wrap(src), nil
		}
	}
}

// catalogFails is a store whose catalog cannot be read while fail is
// set: a refresh then fails after it read the store's bundles.
type catalogFails struct {
	Source
	fail *atomic.Bool
}

func (c catalogFails) Catalog() (*resolver.Catalog, error) {
	if c.fail.Load() {
		return nil, errors.New("catalog unreadable (test)")
	}
	return c.Source.Catalog()
}

// TestCopyReplacingARevokedInstallWithinOneSecondStopsTheOldFileWhenTheRefreshFails:
// a refresh that fails after reading the store's bundles still stops
// serving what the store no longer uses (MIRROR-10); the file replaced
// within the second of its import is such a file, and is left out rather
// than kept as the installed release.
func TestCopyReplacingARevokedInstallWithinOneSecondStopsTheOldFileWhenTheRefreshFails(t *testing.T) {
	published := testBundle(t, 1)
	p := newStore(t, published)
	var fail atomic.Bool
	m, ts := startMirror(t, p, wrapSources(func(src Source) Source { return catalogFails{src, &fail} }))
	if _, body := get(t, http.MethodGet, ts.URL+"/bundles/org.example.echo", nil); !bytes.Equal(body, published) {
		t.Fatal("the mirror does not serve the publisher's file to begin with")
	}
	replaceWithinTheSecond(t, p, published)
	fail.Store(true)
	if err := m.Refresh(); err == nil {
		t.Fatal("the refresh succeeded with the catalog unreadable")
	}
	if resp, body := get(t, http.MethodGet, ts.URL+"/bundles/org.example.echo", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("after the replacement and a failed refresh the mirror answers %d with %s; want 404",
			resp.StatusCode, map[bool]string{true: "the revoked publisher-only file", false: "another file"}[bytes.Equal(body, published)])
	}
}
