package resolver

import (
	"slices"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestRevokedSquattersClaimStillMakesTheTypeAmbiguous
//
// Attack: a squatter (acme, trusted for com.acme) claims org.example's
// legacy type "translate"; the type is ambiguous (BUNDLE-9). The remedy,
// a revocation of the squatter's key, fails its bundle closed, and
// Catalog left its capability out but built Aliases and TypeClaims from
// every alias record, failed-closed owners included: the type stayed
// AmbiguousAlias, so every reader of Aliases alone (the agent's
// per-caller filter, a catalog read through the admin socket) answered
// "translate" 4002 for as long as the revoked (or expired, or stale)
// bundle stayed listed.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-9): a claim whose every owner
// fails closed (revoked, stale, expired) is left out of Aliases and
// TypeClaims, as its owners' capabilities are; the type maps to
// org.example.translate.text alone.
func TestRevokedSquattersClaimStillMakesTheTypeAmbiguous(t *testing.T) {
	acme := sampleKey(t, "acme-publisher")
	claim := map[string]string{"translate": "com.acme.geo.geocode"}
	for _, c := range []struct {
		name   string
		squat  []byte
		failIt func(t *testing.T, s *Store, clock *time.Time)
	}{
		{"revoked", acmeClaiming(t, claim), func(t *testing.T, s *Store, _ *time.Time) {
			res, err := s.ApplyRevocation(revocation(t, "com.acme", []string{didOfPriv(acme)}, nil, acme))
			if err != nil {
				t.Fatal(err)
			}
			if len(res.FailedClosed) != 1 {
				t.Fatalf("revocation result %+v, want com.acme.geo failed closed", res)
			}
		}},
		{"expired", geoSignedBy(t, claim, func(d *bundle.Draft) { exp := testNow.Add(time.Hour); d.ExpiresAt = &exp }, acme), func(_ *testing.T, _ *Store, clock *time.Time) {
			*clock = testNow.Add(2 * time.Hour)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			clock := testNow
			s := newStore(t, func(o *Options) { o.Now = func() time.Time { return clock } })
			mustImport(t, s, sampleBytes(t, "translate"))
			mustImport(t, s, c.squat)
			wantAmbiguous(t, s, "translate", "com.acme.geo.geocode", "org.example.translate.text")
			c.failIt(t, s, &clock)
			cat, err := s.Catalog()
			if err != nil {
				t.Fatal(err)
			}
			if _, ok := cat.ByName["com.acme.geo.geocode"]; ok {
				t.Fatal("the squatter's capability is still offered")
			}
			if name, err := cat.ResolveType("translate"); err != nil || name != "org.example.translate.text" {
				t.Fatalf("Catalog.ResolveType = %q, %v", name, err)
			}
			if got := cat.Aliases["translate"]; got != "org.example.translate.text" {
				t.Fatalf("Aliases[translate] = %q after the squatter's bundle failed closed; want org.example.translate.text (a reader of Aliases answers 4002)", got)
			}
			if got := cat.TypeClaims("translate"); !slices.Equal(got, []string{"org.example.translate.text"}) {
				t.Fatalf("TypeClaims(translate) = %v", got)
			}
		})
	}
}
