package ocitransport

import (
	"context"
	"fmt"
	"testing"

	"github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/ampbundle/ampbundle/amp"
)

// TestStatementCacheFetchesAtMostItsBound: the cache one sync shares
// between its referrers listings fetches each statement manifest once,
// and at most MaxSyncStatements distinct ones: a hostile registry listing
// 1,000 fresh referrers under each of 10,000 bundle tags would otherwise
// make one sync fetch, and keep, ten million. Past the bound a new digest
// is skipped as oci_too_many without a request (the nil endpoint would
// fail on one); a digest already known is still answered
// (docs/SPEC-DECISIONS.md OCI-13, amended).
func TestStatementCacheFetchesAtMostItsBound(t *testing.T) {
	c := &StatementCache{m: make(map[statementKey]*cachedStatement, MaxSyncStatements)}
	known := digest.FromString("known")
	c.m[statementKey{known, 500, true}] = &cachedStatement{err: fail(ErrManifest, "known")}
	for i := 1; i < MaxSyncStatements; i++ {
		c.m[statementKey{digest.FromString(fmt.Sprint(i)), 500, true}] = &cachedStatement{}
	}
	d := ocispec.Descriptor{MediaType: ocispec.MediaTypeImageManifest, Digest: digest.FromString("one more"), Size: 500}
	cs, err := c.fetch(context.Background(), nil, d)
	if err != nil || amp.NameOf(cs.err) != ErrTooMany {
		t.Fatalf("a statement manifest past the %d a sync fetches: %v, %v; want it skipped as %s", MaxSyncStatements, cs, err, ErrTooMany)
	}
	if len(c.m) != MaxSyncStatements {
		t.Fatalf("the cache holds %d manifests past its bound %d", len(c.m), MaxSyncStatements)
	}
	d.Digest = known
	if cs, err := c.fetch(context.Background(), nil, d); err != nil || amp.NameOf(cs.err) != ErrManifest {
		t.Fatalf("a known digest past the bound: %v, %v; want what was learnt of it", cs, err)
	}
}
