package mirror

import (
	"bytes"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// hashless is a store as an older agent's admin socket reports it: its
// bundles carry no manifest_sha256 (MIRROR-20).
type hashless struct{ Source }

func (h hashless) Bundles() ([]resolver.Bundle, error) {
	bs, err := h.Source.Bundles()
	for i := range bs {
		bs[i].ManifestSHA256 = ""
	}
	return bs, err
}

// TestOldAgentSameSecondReplacementIsLeftOutAfterAFailedRefresh
//
// Attack: the mirror serves an older agent's store, whose bundles carry
// no manifest hash, so their key is bundle_id, version and imported_at
// alone. The publisher's only key is revoked and a co-signed copy of the
// same release replaces the install within the second of its import
// (BUNDLE-8); the next refresh reads the bundles, then fails (here, the
// catalog; a cap, a read error). MIRROR-20 says that without the hash
// "no file is reused", but a failed refresh keeps serving the snapshot's
// files whose key is unchanged (refusedBy, MIRROR-10): the old file,
// signed by the revoked key alone, stays served as the installed release
// until a refresh succeeds.
//
// Defence: a bundle whose key carries no manifest hash is not vouched
// for by an unchanged key either (refusedBy): the failed refresh leaves
// it out (404, before: 200 with the revoked file) until a refresh
// succeeds and exports it again.
func TestOldAgentSameSecondReplacementIsLeftOutAfterAFailedRefresh(t *testing.T) {
	published := testBundle(t, 1)
	p := newStore(t, published)
	var fail atomic.Bool
	m, ts := startMirror(t, p, wrapSources(func(src Source) Source { return hashless{catalogFails{src, &fail}} }))
	if _, body := get(t, http.MethodGet, ts.URL+"/bundles/org.example.echo", nil); !bytes.Equal(body, published) {
		t.Fatal("the mirror does not serve the publisher's file to begin with")
	}
	cosigned := replaceWithinTheSecond(t, p, published)
	fail.Store(true)
	if err := m.Refresh(); err == nil {
		t.Fatal("the refresh succeeded with the catalog unreadable")
	}
	if resp, body := get(t, http.MethodGet, ts.URL+"/bundles/org.example.echo", nil); resp.StatusCode != http.StatusNotFound {
		t.Fatalf("through an older agent, after the replacement and a failed refresh the mirror answers %d with %s; want 404",
			resp.StatusCode, map[bool]string{true: "the revoked publisher-only file", false: "another file"}[bytes.Equal(body, published)])
	}
	fail.Store(false)
	if err := m.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, body := get(t, http.MethodGet, ts.URL+"/bundles/org.example.echo", nil); !bytes.Equal(body, cosigned) {
		t.Fatal("through an older agent, the refresh that succeeds does not serve the co-signed copy the store holds")
	}
}
