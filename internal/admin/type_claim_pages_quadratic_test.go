package admin

import (
	"fmt"
	"runtime"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/resolver"
)

// TestLaterClaimPagesCostNoMoreThanTheirOwnSize: GET
// /v1/catalog/claims?from=N (docs/SPEC-DECISIONS.md ADMIN-2) sorted the
// whole alias table and walked every ambiguous type before the N-th
// claim for each page, so a page cost the whole table and a read of all
// P pages P times it: quadratic in the claims, for a caller asking page
// after page (or the last page again and again). Now the route keeps the
// index of its catalog's types (claimsIndexes, built once per catalog)
// and a page is found by a binary search: every page, the last one
// included, allocates what it carries and no more (measured here in
// bytes, the table being 40 times a page), and the pages read in turn
// are still every claim once, in order.
func TestLaterClaimPagesCostNoMoreThanTheirOwnSize(t *testing.T) {
	const types = 80_000 // two claims each: 160,000 claims, 40 pages
	aliases := make(map[string]string, types)
	claims := make(map[string][]string, types)
	for i := range types {
		typ := fmt.Sprintf("t%06d", i)
		aliases[typ] = resolver.AmbiguousAlias
		claims[typ] = []string{"org.a.tools." + typ, "org.b.tools." + typ}
	}
	cat := (&resolver.Catalog{Generation: 4, Aliases: aliases}).WithTypeClaims(claims)

	var k claimsIndexes
	k.of(cat) // the index, built once for the catalog
	var got []string
	var worst uint64
	pages := 0
	for from := uint64(0); ; pages++ {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		p := k.of(cat).page(cat, from, MaxTypeClaimsTotal)
		runtime.ReadMemStats(&after)
		worst = max(worst, after.TotalAlloc-before.TotalAlloc)
		for _, typ := range slices.Sorted(func(yield func(string) bool) {
			for typ := range p.TypeClaims {
				if !yield(typ) {
					return
				}
			}
		}) {
			got = append(got, p.TypeClaims[typ]...)
		}
		if p.Next == 0 {
			break
		}
		from = p.Next
	}
	if pages+1 != 2*types/MaxTypeClaimsTotal+1 || len(got) != 2*types {
		t.Fatalf("%d pages of %d claims in all, want %d pages of %d", pages+1, len(got), 2*types/MaxTypeClaimsTotal+1, 2*types)
	}
	for i := range types {
		typ := fmt.Sprintf("t%06d", i)
		if got[2*i] != "org.a.tools."+typ || got[2*i+1] != "org.b.tools."+typ {
			t.Fatalf("claim %d of the pages read in turn is %s, want type %s's", 2*i, got[2*i], typ)
		}
	}
	// A page of 4,096 claims (2,048 types) allocates its map and its
	// lists: under half a MiB. Sorting and walking the table of 80,000
	// types for each page allocated several MiB a page.
	const bound = 1 << 20
	if worst > bound {
		t.Errorf("a page of at most %d claims allocated %d bytes, over %d: it costs the whole table, not its own size", MaxTypeClaimsTotal, worst, bound)
	}
}
