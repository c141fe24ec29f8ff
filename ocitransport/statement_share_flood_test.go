package ocitransport

import (
	"context"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/amp"
)

// TestStatementShareFloodIsPerListing: the listings of one run share the
// cache but not its fetches: each may fetch Share() manifests the cache
// has not seen (MaxSyncStatements over the run's listings), so referrers
// listed under the bundles read first cannot spend those of the bundles
// read after them. A referrer past the listing's share is skipped,
// oci_too_many, unfetched, and TooManyStatements says the bundle's
// statements were not all read; a descriptor refused without a fetch (not
// a manifest's media type, a junk digest, no size) and a manifest the
// cache already knows cost no share (docs/SPEC-DECISIONS.md OCI-13,
// amended in review 30).
func TestStatementShareFloodIsPerListing(t *testing.T) {
	const share = 3
	fetchable := func(i int) ocispec.Descriptor {
		return ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeRevocation, Digest: digest.FromString(fmt.Sprint("s", i)), Size: 500}
	}
	var free []ocispec.Descriptor
	for i := range MaxReferrers / 4 {
		free = append(free,
			ocispec.Descriptor{MediaType: "application/vnd.test.junk", ArtifactType: ArtifactTypeRevocation, Digest: digest.FromString(fmt.Sprint("j", i)), Size: 500},
			ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeRevocation, Digest: digest.Digest(fmt.Sprint("sha256:junk", i)), Size: 500})
	}
	listings := map[string][]ocispec.Descriptor{
		cacheTestSubject(0).Descriptor.Digest.String(): {fetchable(0), fetchable(1), fetchable(2), fetchable(3), fetchable(4)},
		cacheTestSubject(1).Descriptor.Digest.String(): append(append([]ocispec.Descriptor{}, free...), fetchable(0), fetchable(1), fetchable(2), fetchable(5), fetchable(6), fetchable(7)),
	}
	ep := cacheTestRegistry(t, func(subject string) []byte { return cacheTestPage(listings[subject]...) }, nil)
	cache := &StatementCache{Listings: MaxSyncStatements / share}
	if cache.Share() != share {
		t.Fatalf("test setup: share %d, want %d", cache.Share(), share)
	}
	for i, want := range []struct {
		cut     bool
		tooMany int
	}{{true, 2}, {false, 0}} {
		_, skipped, err := ep.StatementsCached(context.Background(), cacheTestSubject(i), cache)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, s := range skipped {
			if amp.NameOf(s) == ErrTooMany {
				n++
			}
		}
		if TooManyStatements(skipped) != want.cut || n != want.tooMany {
			t.Fatalf("listing %d: %d referrers skipped oci_too_many, cut %v; want %d, cut %v (share %d a listing)",
				i, n, TooManyStatements(skipped), want.tooMany, want.cut, share)
		}
	}
	if len(cache.m) != 2*share {
		t.Fatalf("the cache holds %d manifests, want %d: each listing's share fetched, the free descriptors kept nowhere", len(cache.m), 2*share)
	}
}
