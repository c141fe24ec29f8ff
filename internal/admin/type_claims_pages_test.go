//go:build unix

package admin

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestTypeClaimPagesAreBoundedWholeAndOfOneGeneration: the pages of
// GET /v1/catalog/claims (docs/SPEC-DECISIONS.md ADMIN-2) each carry at
// most MaxTypeClaimsTotal claims and together every claim once, a type's
// running on into the next page; a client reading them refuses a page
// that does not follow the previous one (a server that would loop it),
// and answers busy, never a mix, when the generation moves between pages
// on every try.
func TestTypeClaimPagesAreBoundedWholeAndOfOneGeneration(t *testing.T) {
	aliases := map[string]string{"plain": "org.example.demo.echo"}
	claims := map[string][]string{"plain": {"org.example.demo.echo"}}
	for i := range 70 {
		typ := fmt.Sprintf("t%03d", i)
		aliases[typ] = resolver.AmbiguousAlias
		for j := range 100 {
			claims[typ] = append(claims[typ], fmt.Sprintf("org.n%03d.tools.%s", j, typ))
		}
	}
	cat := (&resolver.Catalog{Generation: 9, Aliases: aliases}).WithTypeClaims(claims)

	var gen atomic.Uint64
	var stuck, moving atomic.Bool
	var pages atomic.Int64
	gen.Store(9)
	c := serveHandler(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		from, _ := strconv.ParseUint(r.URL.Query().Get("from"), 10, 64)
		p := typeClaimsFrom(cat, from, MaxTypeClaimsTotal)
		p.Generation = gen.Load()
		if moving.Load() {
			p.Generation = gen.Add(1)
		}
		if stuck.Load() && p.Next != 0 {
			p.Next = from // a page that does not move on: 0, the last
		}
		pages.Add(1)
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(p)
	}))

	got, g, err := c.TypeClaims()
	if err != nil || g != 9 {
		t.Fatalf("claims read by pages: generation %d, %v", g, err)
	}
	if pages.Load() != 2 {
		t.Errorf("%d pages for 7000 claims, want 2 of at most %d", pages.Load(), MaxTypeClaimsTotal)
	}
	if _, ok := got["plain"]; ok || len(got) != 70 {
		t.Fatalf("%d types paged, want the 70 ambiguous ones alone", len(got))
	}
	for typ, names := range got {
		if !slices.Equal(names, claims[typ]) {
			t.Fatalf("type %s: %d claims read by pages, want its %d", typ, len(names), len(claims[typ]))
		}
	}
	if p := typeClaimsFrom(cat, 0, MaxTypeClaimsTotal); p.Next != MaxTypeClaimsTotal || p.Total != 7000 {
		t.Fatalf("first page: next %d, total %d; want %d, 7000", p.Next, p.Total, MaxTypeClaimsTotal)
	}

	stuck.Store(true)
	if _, _, err := c.TypeClaims(); amp.NameOf(err) != "admin_socket" {
		t.Fatalf("a page that does not move on: %v, want admin_socket", err)
	}
	stuck.Store(false)

	// The store changes between every two pages.
	moving.Store(true)
	if _, _, err := c.TypeClaims(); amp.CodeOf(err) != amp.CodeOverloaded || amp.NameOf(err) != "busy" {
		t.Fatalf("claims of a store changing between pages: %v, want busy (5004)", err)
	}
}
