//go:build unix

package admin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"fmt"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/testalloc"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestLaterClaimPagesCostNoMoreThanTheirOwnSize: GET
// /v1/catalog/claims?from=N (docs/SPEC-DECISIONS.md ADMIN-2) sorted the
// whole alias table and walked every ambiguous type before the N-th
// claim for each page, so a page cost the whole table and a read of all
// P pages P times it: quadratic in the claims, for a caller asking page
// after page (or the last page again and again). Now the route keeps the
// index of its catalog's types (claimsIndexes, built once per catalog)
// and a page is found by a binary search. Asked as a client asks, page
// after page through the admin socket of a handler over a store whose
// two authorities claim the same 80,000 legacy types, every page, the
// last one included, allocates what it carries and no more (measured
// here in bytes, in the agent and the client together, the table being
// 40 times a page), and the pages read in turn are still every claim
// once, in order. A route that did not reach the index (an index built
// per request, or none) fails here.
func TestLaterClaimPagesCostNoMoreThanTheirOwnSize(t *testing.T) {
	const types = 80_000 // two claims each: 160,000 claims, 40 pages
	s, _, c := serve(t)
	claimed := installTypeClaims(t, s, types)

	page := func(from uint64) *claimsPage {
		t.Helper()
		p, err := Call(c, &Op[claimsRequest, *claimsPage]{Spec: opTypeClaims().Spec}, claimsRequest{From: strconv.FormatUint(from, 10)})
		if err != nil {
			t.Fatalf("page from %d: %v", from, err)
		}
		return p
	}
	page(0) // the catalog read and its index built, once
	// A page of 4,096 claims (2,048 types) allocates its map and its
	// lists, and its JSON in the agent and in the client: under 2 MiB.
	// Sorting and walking the table of 80,000 types for each page, or
	// indexing it for each request, allocated some 18 MiB a page.
	const bound = 4 << 20
	var got []string
	var worst uint64
	pages := 0
	for from := uint64(0); ; pages++ {
		var p *claimsPage
		worst = max(worst, testalloc.Within(bound, func() { p = page(from) }))
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
		if want := claimed(i); got[2*i] != want[0] || got[2*i+1] != want[1] {
			t.Fatalf("claims %d and %d of the pages read in turn are %s and %s, want %v", 2*i, 2*i+1, got[2*i], got[2*i+1], want)
		}
	}
	if worst > bound {
		t.Errorf("a page of at most %d claims allocated %d bytes, over %d: it costs the whole table, not its own size", MaxTypeClaimsTotal, worst, bound)
	}
}

// installTypeClaims trusts two authorities (org.a and org.b) and installs
// bundles of each claiming the legacy types t000000 to types-1, so that
// each is ambiguous with two claims; claimed(i) is type i's claims,
// sorted.
func installTypeClaims(t *testing.T, s *resolver.Store, types int) (claimed func(i int) [2]string) {
	t.Helper()
	name := func(ns string, i int) string { return fmt.Sprintf("%s.tools%d.check", ns, i/bundle.MaxAliases) }
	for seed, ns := range []string{"org.a", "org.b"} {
		key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(60 + seed)}, 32))
		if err := s.TrustAdd(ns, key.Public().(ed25519.PublicKey), []string{ns}); err != nil {
			t.Fatal(err)
		}
		for first := 0; first < types; first += bundle.MaxAliases {
			capName := name(ns, first)
			aliases := map[string]string{}
			for i := first; i < min(types, first+bundle.MaxAliases); i++ {
				aliases[fmt.Sprintf("t%06d", i)] = capName
			}
			b := aliasesBundle(t, key, fmt.Sprintf("%s.tools%d", ns, first/bundle.MaxAliases), capName, aliases)
			if _, err := s.Import(context.Background(), bytes.NewReader(b), resolver.ImportOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return func(i int) [2]string { return [2]string{name("org.a", i), name("org.b", i)} }
}

// aliasesBundle is a bundle of one capability, name:1.0.0, signed by key,
// claiming each legacy type of aliases for it.
func aliasesBundle(t *testing.T, key ed25519.PrivateKey, bundleID, name string, aliases map[string]string) []byte {
	t.Helper()
	const schema = `{"type":"object"}`
	dir := "capabilities/" + name + "/1.0.0/"
	d := &bundle.Draft{BundleID: bundleID, Version: 1, CreatedAt: time.Now().Add(-time.Hour), Aliases: aliases,
		Artifacts: []bundle.Source{
			bundle.BytesSource(dir+"input.schema.json", bundle.MediaTypeSchema, []byte(schema)),
			bundle.BytesSource(dir+"output.schema.json", bundle.MediaTypeSchema, []byte(schema))},
		Capabilities: []capability.Descriptor{{Name: name, Version: mustVersion(t, "1.0.0"),
			InputSchema:  capability.SchemaRef{ArtifactKey: dir + "input.schema.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: dir + "output.schema.json"}}}}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
