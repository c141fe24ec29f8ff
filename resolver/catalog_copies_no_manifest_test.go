package resolver

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestACatalogRebuildCopiesNoStoredManifest
//
// Attack: a catalog is rebuilt at every new store generation (each
// import, removal, trust change or heartbeat) and whenever a bundle it
// offers expires, and the agent's first CAP_QUERY or CAP_INVOKE after it
// waits for the rebuild. The rebuild read every installed bundle's record
// whole to learn whether it was revoked (revokedBundles), copying its
// signed manifest (up to bundle.DefaultMaxManifestSize, 16 MiB, each)
// out of the store, though it needs none of its bytes: a publisher's
// manifest-heavy bundles made every rebuild allocate their manifests
// again.
//
// Defence (docs/SPEC-DECISIONS.md STORE-6): each record is read once,
// without its signed manifest (listedRecord, as the listing reads it,
// MIRROR-20), for its revocation and its expiry together. Bound: a
// rebuild allocates less than a sixteenth of the stored manifests' bytes
// (before: about their bytes once more).
func TestACatalogRebuildCopiesNoStoredManifest(t *testing.T) {
	if testalloc.Race {
		t.Skip("allocation bounds are not judged under the race detector")
	}
	s, total := manifestHeavyStore(t, 4, 5000)
	rebuild := func() {
		s.catalog.mu.Lock()
		s.catalog.cur = nil // the next Catalog rebuilds, as at a new generation
		s.catalog.mu.Unlock()
		c, err := s.Catalog()
		if err != nil || len(c.Names) != 4 {
			t.Fatalf("catalog: %v, %v", c, err)
		}
	}
	rebuild()
	per := testalloc.Least(rebuild)
	t.Logf("a rebuild over %d stored manifest bytes allocates %d bytes", total, per)
	if per > uint64(total/16) {
		t.Fatalf("a catalog rebuild over %d stored manifest bytes allocates %d bytes: it copies the manifests out of the store", total, per)
	}
}
