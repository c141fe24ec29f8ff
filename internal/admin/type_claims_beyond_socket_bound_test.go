//go:build unix

package admin

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestTypeClaimedBeyondTheSocketBoundAnswersAsTheStore
//
// Attack: more authorities than MaxTypeClaims (64) each claim one legacy
// type (each may hold one claim, BUNDLE-9): the catalog document leaves
// that type out of type_claims, so a catalog read through the admin
// socket answers it 4002 capability_not_found, while the store's own
// catalog answers 4001 ambiguous_type with every claim. A reader fed
// through the socket (an agent, a tool) then tells a caller the type
// does not exist, and a caller allowed one of the claims gets a
// different answer through the socket than from the store.
//
// Was: 4002 through the socket. Now (docs/SPEC-DECISIONS.md ADMIN-2):
// the catalog document says it left types out (type_claims_more) and the
// client reads every claim by pages of at most MaxTypeClaimsTotal, all of
// one generation, so the type resolves alike either way.
func TestTypeClaimedBeyondTheSocketBoundAnswersAsTheStore(t *testing.T) {
	s, _, c := serve(t)
	n := MaxTypeClaims + 1
	var want []string
	for i := range n {
		key := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{byte(100 + i)}, 32))
		ns := fmt.Sprintf("org.n%03d", i)
		if err := s.TrustAdd(ns, key.Public().(ed25519.PublicKey), []string{ns}); err != nil {
			t.Fatal(err)
		}
		name := ns + ".tools.check"
		b := claimBundle(t, key, ns+".tools", name, "lint")
		if _, err := s.Import(context.Background(), bytes.NewReader(b), resolver.ImportOptions{}); err != nil {
			t.Fatal(err)
		}
		want = append(want, name)
	}
	local, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	remote, err := c.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	for what, cat := range map[string]*resolver.Catalog{"store": local, "socket": remote} {
		_, err := cat.ResolveType("lint")
		var ae *amp.Error
		if amp.NameOf(err) != capability.ErrAmbiguousType || !errors.As(err, &ae) {
			t.Errorf("%s: a type %d authorities claim resolves with %v, want %s", what, n, err, capability.ErrAmbiguousType)
			continue
		}
		if got := candidates(t, ae); !slices.Equal(got, want) {
			t.Errorf("%s: %d candidates, want all %d", what, len(got), len(want))
		}
	}
}
