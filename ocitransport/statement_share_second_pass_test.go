package ocitransport

import (
	"context"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
)

// TestStatementShareUnusedIsHandedToCutListings: a first pass over the
// listings of a run (StatementsFitting) leaves whole a listing whose
// manifests new to the run are over its share: nothing fetched, nothing
// reported, how many it needs returned. The second pass reads it with
// what the first left (SetShare of Left): every referrer is read, none
// skipped oci_too_many, so a share the other listings did not use is not
// lost (docs/SPEC-DECISIONS.md OCI-13, amended in review 36).
func TestStatementShareUnusedIsHandedToCutListings(t *testing.T) {
	const share, listed = 3, 8
	var descs []ocispec.Descriptor
	for i := range listed {
		descs = append(descs, ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, ArtifactType: ArtifactTypeRevocation, Digest: digest.FromString(fmt.Sprint("s", i)), Size: 500})
	}
	descs = append(descs, descs[0]) // listed again: needed once
	ep := cacheTestRegistry(t, func(string) []byte { return cacheTestPage(descs...) }, nil)
	cache := &StatementCache{Listings: MaxSyncStatements / share}
	out, skipped, need, err := ep.StatementsFitting(context.Background(), cacheTestSubject(0), cache)
	if err != nil || need != listed || len(out) != 0 || len(skipped) != 0 || len(cache.m) != 0 {
		t.Fatalf("first pass over a listing of %d new manifests, share %d: need %d, %d out, %d skipped, %d fetched, err %v; want need %d and nothing fetched or reported",
			listed, share, need, len(out), len(skipped), len(cache.m), err, listed)
	}
	if cache.Left() != MaxSyncStatements {
		t.Fatalf("Left %d after a first pass that fetched nothing", cache.Left())
	}
	cache.SetShare(cache.Left())
	_, skipped, err = ep.StatementsCached(context.Background(), cacheTestSubject(0), cache)
	if err != nil || TooManyStatements(skipped) || len(cache.m) != listed {
		t.Fatalf("second pass with what was left: %d fetched, cut %v, err %v; want all %d read", len(cache.m), TooManyStatements(skipped), err, listed)
	}
	if cache.Left() != MaxSyncStatements-listed {
		t.Fatalf("Left %d, want %d", cache.Left(), MaxSyncStatements-listed)
	}
}
