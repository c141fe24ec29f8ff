package compat

import (
	"reflect"
	"testing"
)

// TestBundleClaimVerdictCacheIsBounded: a bundle whose descriptors each
// carry their own schemas makes every claim a new pair of schema keys,
// so the per-bundle verdict cache, unbounded, kept one entry per claim
// (10,000 descriptors of 256 claims each: millions of entries held for
// the whole import) without reusing any. The cache stops growing at
// maxCachedVerdicts, and the claims derived past it are the same.
func TestBundleClaimVerdictCacheIsBounded(t *testing.T) {
	descs, src := claimFloodBundle(t, 12, 1)
	want := DeriveClaims(descs, src)
	ix := newCoverIndex(descs)
	ix.maxVerdicts = 10
	for i, d := range descs {
		got := ix.claims(d, ix.cover(d).callers(), src)
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("descriptor %d: claims past the cache bound %v, want %v", i, got, want[i])
		}
	}
	if ix.spent() {
		t.Fatal("the budget was spent: not a witness")
	}
	if n := len(ix.verdicts); n > ix.maxVerdicts {
		t.Fatalf("%d verdicts cached, bound %d", n, ix.maxVerdicts)
	}
}
