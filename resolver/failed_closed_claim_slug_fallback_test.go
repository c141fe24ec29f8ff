package resolver

import (
	"bytes"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// resolveAsCaller resolves the legacy type typ as the agent resolves the
// type of a CAP_QUERY filter and of a CAP_INVOKE (agent/query.go
// resolveName, one function for both) for a caller allowed every
// capability: the type's claims (TypeClaims, AmbiguousAlias kept) among
// the names the catalog offers. It also resolves it as a reader of
// Aliases alone does (a catalog decoded from an older agent's admin
// socket document) and fails t when the two readers disagree.
func resolveAsCaller(t *testing.T, cat *Catalog, typ string) (string, error) {
	t.Helper()
	var claims map[string][]string
	if names := cat.TypeClaims(typ); len(names) > 0 {
		claims = map[string][]string{typ: names}
	}
	name, err := capability.ResolveTypeClaims(typ, claims, cat.Names)
	remote := &Catalog{Names: cat.Names, ByName: cat.ByName, Aliases: cat.Aliases}
	rname, rerr := remote.ResolveType(typ)
	if rname != name || amp.CodeOf(rerr) != amp.CodeOf(err) {
		t.Fatalf("a reader of Aliases alone resolves %q to %q, %v; the store's claims to %q, %v", typ, rname, rerr, name, err)
	}
	if cname, cerr := cat.ResolveType(typ); cname != name || amp.CodeOf(cerr) != amp.CodeOf(err) {
		t.Fatalf("Catalog.ResolveType(%q) = %q, %v; the agent's rule %q, %v", typ, cname, cerr, name, err)
	}
	return name, err
}

// tearDescriptorOf makes the stored descriptor of the first capability
// version named name undecodable (its entry still naming its bundle).
func tearDescriptorOf(t *testing.T, s *Store, name string) {
	t.Helper()
	var key []byte
	if err := s.db.View(func(tx *bolt.Tx) error {
		k, _ := bucket(tx, bDescriptors).Cursor().Seek(key2(name, ""))
		if bytes.HasPrefix(k, key2(name, "")) {
			key = clone(k)
		}
		return nil
	}); err != nil || key == nil {
		t.Fatalf("test setup: no descriptor of %s (%v)", name, err)
	}
	damageRecord(t, s, bDescriptors, key, func(v []byte) []byte {
		return withStoredDescriptor(t, v, func(d []byte) []byte { return d[:len(d)-1] })
	})
}

// forgetCatalog drops s's cached catalog: damage written into the store
// file by hand changes no generation.
func forgetCatalog(s *Store) {
	s.catalog.mu.Lock()
	s.catalog.cur = nil
	s.catalog.mu.Unlock()
}

// TestALegacyTypeWhoseClaimingBundleFailsClosedIsNotRoutedToAnotherAuthority
//
// Attack: com.acme claims the legacy type "text" for its
// com.acme.geo.geocode; org.example, another authority, offers
// org.example.translate.text, whose slug is "text". Callers that send
// CAP_QUERY or CAP_INVOKE by type "text" reach com.acme's capability.
// When com.acme's bundle failed closed (its key revoked, the bundle
// expired or stale, its record unreadable), Catalog dropped the claim
// (BUNDLE-9: a claim whose every owner fails closed is left out) and
// the type fell to the slug rule (RFC 004 A.7): every caller's "text"
// silently reached org.example.translate.text, another publisher's
// capability with another contract, chosen by nobody. A revocation, the
// remedy meant to stop a publisher's traffic, routed it to another.
//
// Defence (docs/SPEC-DECISIONS.md STORE-8): a type whose record holds
// claims but none of a bundle that is served maps to AmbiguousAlias,
// claimed for AmbiguousAlias alone, as an unreadable record's type does
// (STORE-5): it names no capability, so the type is 4002 for every
// caller and every reader (the store's catalog, a reader of Aliases
// alone, the agent's per-caller rule). A type no record claims still
// resolves by slug, and a type with one claim of a served bundle still
// resolves to it.
func TestALegacyTypeWhoseClaimingBundleFailsClosedIsNotRoutedToAnotherAuthority(t *testing.T) {
	acme := sampleKey(t, "acme-publisher")
	day := 24 * time.Hour
	claim := map[string]string{"text": "com.acme.geo.geocode"}
	cases := []struct {
		name   string
		geo    []byte
		failIt func(t *testing.T, s *Store, clock *time.Time)
	}{
		{"its key revoked", acmeClaiming(t, claim), func(t *testing.T, s *Store, _ *time.Time) {
			if _, err := s.ApplyRevocation(revocation(t, "com.acme", []string{didOfPriv(acme)}, nil, acme)); err != nil {
				t.Fatal(err)
			}
		}},
		{"expired", geoSignedBy(t, claim, func(d *bundle.Draft) { exp := testNow.Add(time.Hour); d.ExpiresAt = &exp }, acme),
			func(_ *testing.T, _ *Store, clock *time.Time) { *clock = testNow.Add(2 * time.Hour) }},
		{"stale", acmeClaiming(t, claim), func(t *testing.T, s *Store, _ *time.Time) {
			if err := s.SetFreshnessPolicy("com.acme", nil, 30*day); err != nil {
				t.Fatal(err)
			}
			if _, err := s.ApplyHeartbeat(heartbeat(t, "com.acme.other", 1, testNow.Add(41*day), acme)); err != nil {
				t.Fatal(err)
			}
		}},
		{"its record unreadable", acmeClaiming(t, claim), func(t *testing.T, s *Store, _ *time.Time) {
			damageRecord(t, s, bBundles, []byte("com.acme.geo"), torn)
			forgetCatalog(s)
		}},
		{"a descriptor of it undecodable", acmeClaiming(t, claim), func(t *testing.T, s *Store, _ *time.Time) {
			tearDescriptorOf(t, s, "com.acme.geo.distance")
			forgetCatalog(s)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := testNow
			s := storeAt(t)
			s.opts.Now = func() time.Time { return clock }
			t.Cleanup(func() { s.Close() })
			mustImport(t, s, sampleBytes(t, "translate"))
			mustImport(t, s, tc.geo)
			if got, err := resolveAsCaller(t, catalogNames(t, s), "text"); err != nil || got != "com.acme.geo.geocode" {
				t.Fatalf("test setup: text resolves to %q, %v; want com.acme's claim", got, err)
			}
			tc.failIt(t, s, &clock)
			cat := catalogNames(t, s)
			if _, ok := cat.ByName["com.acme.geo.geocode"]; ok {
				t.Fatal("test setup: com.acme's capability is still offered")
			}
			if got, err := resolveAsCaller(t, cat, "text"); amp.CodeOf(err) != amp.CodeCapabilityNotFound {
				t.Fatalf("text, claimed by a bundle that fails closed, resolves to %q, %v; want 4002, not another authority's capability", got, err)
			}
			if got := cat.Aliases["text"]; got != AmbiguousAlias {
				t.Fatalf("Aliases[text] = %q, want the marker that names no capability", got)
			}
			// Another authority's own type and a capability's own name are
			// still served.
			if got, err := resolveAsCaller(t, cat, "translate"); err != nil || got != "org.example.translate.text" {
				t.Fatalf("translate resolves to %q, %v", got, err)
			}
			if got, err := resolveAsCaller(t, cat, "org.example.translate.text"); err != nil || got != "org.example.translate.text" {
				t.Fatalf("a canonical name resolves to %q, %v", got, err)
			}
		})
	}
}

// TestALegacyTypeNeverClaimedStillResolvesBySlug
//
// Guard of STORE-8: the slug rule (RFC 004 A.7) stands for a type no
// installed bundle claims, also once a bundle that claimed it is removed
// (the record goes with its last owner). A type one served bundle claims
// while another's claim of it fails closed resolves to the served claim
// (BUNDLE-9; TestRevokedSquattersClaimStillMakesTheTypeAmbiguous).
func TestALegacyTypeNeverClaimedStillResolvesBySlug(t *testing.T) {
	acme := sampleKey(t, "acme-publisher")
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	mustImport(t, s, sampleBytes(t, "geo"))
	if got, err := resolveAsCaller(t, catalogNames(t, s), "text"); err != nil || got != "org.example.translate.text" {
		t.Fatalf("an unclaimed type resolves to %q, %v; want its slug match", got, err)
	}
	mustImport(t, s, geoSignedBy(t, map[string]string{"text": "com.acme.geo.geocode"}, func(d *bundle.Draft) { d.Version = 5 }, acme))
	if got, err := resolveAsCaller(t, catalogNames(t, s), "text"); err != nil || got != "com.acme.geo.geocode" {
		t.Fatalf("a claimed type resolves to %q, %v; want its claim", got, err)
	}
	if _, err := s.Remove("com.acme.geo"); err != nil {
		t.Fatal(err)
	}
	if got, err := resolveAsCaller(t, catalogNames(t, s), "text"); err != nil || got != "org.example.translate.text" {
		t.Fatalf("after the claiming bundle's removal the type resolves to %q, %v; want its slug match", got, err)
	}
}
