package admin

import (
	"fmt"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestTypeClaimsFloodIsBoundedAndFailsClosed
//
// Attack: the catalog document (GET /v1/catalog) carried every claim of
// every ambiguous legacy type, with no bound per type nor in all: a store
// whose trusted keys span many scopes (each authority may hold one claim
// of a type, BUNDLE-9) and whose bundles carry many aliases grew the
// document, built and held in memory for every catalog read through the
// socket, toward the client's answer bound, and a reader took any number
// of claims as a type's candidates.
//
// Defence (docs/SPEC-DECISIONS.md CAP-8, amended): at most MaxTypeClaims
// claims per type and MaxTypeClaimsTotal in all, types taken in sorted
// order; a type beyond either bound is left out whole (never some of its
// claims, which could leave a caller one squatter's claim as the answer),
// so through the socket it names no capability (4002), as in an older
// agent's document; a reader given more than MaxTypeClaims claims of a
// type reads it so too.
func TestTypeClaimsFloodIsBoundedAndFailsClosed(t *testing.T) {
	aliases := map[string]string{"plain": "org.example.demo.echo"}
	claims := map[string][]string{"plain": {"org.example.demo.echo"}}
	claimsOf := func(typ string, n int) []string {
		var out []string
		for i := range n {
			out = append(out, fmt.Sprintf("org.n%03d.tools.%s", i, typ))
		}
		return out
	}
	// One type over the per-type bound, then more full types than the
	// total bound holds.
	aliases["aaa-big"], claims["aaa-big"] = resolver.AmbiguousAlias, claimsOf("big", MaxTypeClaims+1)
	full := MaxTypeClaimsTotal/MaxTypeClaims + 2
	for i := range full {
		typ := fmt.Sprintf("t%03d", i)
		aliases[typ], claims[typ] = resolver.AmbiguousAlias, claimsOf(typ, MaxTypeClaims)
	}
	cat := (&resolver.Catalog{Aliases: aliases}).WithTypeClaims(claims)

	got, more := boundedTypeClaims(cat)
	if !more {
		t.Errorf("types were left out of type_claims but the document does not say so (type_claims_more)")
	}
	total := 0
	for typ, names := range got {
		total += len(names)
		if len(names) != len(claims[typ]) {
			t.Errorf("type %s sent with %d of its %d claims: a part of a type's claims can make a squatter's the answer", typ, len(names), len(claims[typ]))
		}
	}
	if total > MaxTypeClaimsTotal {
		t.Fatalf("type_claims carries %d claims, more than %d", total, MaxTypeClaimsTotal)
	}
	if _, ok := got["aaa-big"]; ok {
		t.Fatal("a type over MaxTypeClaims is sent")
	}
	if _, ok := got["plain"]; ok {
		t.Fatal("a type of one claim is sent in type_claims (its aliases entry says it)")
	}
	if len(got) != MaxTypeClaimsTotal/MaxTypeClaims || got["t000"] == nil {
		t.Fatalf("%d types sent, want the first %d in sorted order", len(got), MaxTypeClaimsTotal/MaxTypeClaims)
	}

	// What a reader of the document makes of it: a type left out, or
	// sent with more claims than the bound, names no capability.
	doc := &Catalog{Aliases: aliases, TypeClaims: got}
	doc.TypeClaims["aaa-big"] = claims["aaa-big"] // a server that does not bound
	for _, typ := range []string{"aaa-big", "t000", fmt.Sprintf("t%03d", full-1)} {
		for _, n := range claims[typ] {
			doc.Entries = append(doc.Entries, CatalogEntry{BundleID: "b", Descriptor: capability.Descriptor{Name: n}})
		}
	}
	remote := catalogOf(doc)
	for _, typ := range []string{"aaa-big", fmt.Sprintf("t%03d", full-1)} {
		if _, err := remote.ResolveType(typ); amp.CodeOf(err) != amp.CodeCapabilityNotFound {
			t.Errorf("type %s through the socket: %v, want 4002", typ, err)
		}
	}
	if _, err := remote.ResolveType("t000"); amp.NameOf(err) != capability.ErrAmbiguousType {
		t.Errorf("type t000 through the socket: %v, want 4001", err)
	}
}
