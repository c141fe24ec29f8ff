package resolver

import (
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// Reproductions of the holes a second review (r13) found in the trust
// code after issue 13: each test asserts the safe behaviour.

// TestExpiredBundleDIDServedFromCache: ResolveDID caches a DID document per
// store generation and returns the cached one without looking at the
// bundle's expiry again, so once a bundle expires by the clock (no store
// change), its DID document keeps resolving; Resolve of its artifacts
// fails 5002 bundle_expired at the same moment.
func TestExpiredBundleDIDServedFromCache(t *testing.T) {
	clock := testNow
	s := newStore(t, func(o *Options) { o.Now = func() time.Time { return clock } })
	exp := testNow.Add(time.Hour)
	mustImport(t, s, cosignedDraft(t, 1, func(d *bundle.Draft) { d.ExpiresAt = &exp }, sampleKey(t, "example-publisher")))
	const did = "did:web:translator.example.org"
	if _, err := s.ResolveDID(t.Context(), did); err != nil {
		t.Fatal(err)
	}
	clock = testNow.Add(2 * time.Hour)
	_, rerr := s.Resolve(descriptorRef(t, s))
	if _, err := s.ResolveDID(t.Context(), did); err == nil {
		t.Fatalf("bundle expired an hour ago (Resolve: %v), yet its DID document still resolves from the cache", rerr)
	}
}
