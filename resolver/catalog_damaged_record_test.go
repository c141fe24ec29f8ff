package resolver

import (
	"errors"
	"slices"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
)

// damageRecord replaces the value at key of the bucket name with edit's
// (of a copy of the value there).
func damageRecord(t *testing.T, s *Store, name string, key []byte, edit func([]byte) []byte) {
	t.Helper()
	if err := s.db.Update(func(tx *bolt.Tx) error {
		b := bucket(tx, name)
		v := b.Get(key)
		if v == nil {
			t.Fatalf("test setup: no %s record %q", name, key)
		}
		return b.Put(key, edit(clone(v)))
	}); err != nil {
		t.Fatal(err)
	}
}

// torn cuts a record's last byte; notCBOR replaces it with a byte that
// starts no CBOR item.
func torn(v []byte) []byte  { return v[:len(v)-1] }
func notCBOR([]byte) []byte { return []byte{0xff} }

// catalogNames returns the names Catalog lists, failing t when it fails.
func catalogNames(t *testing.T, s *Store) *Catalog {
	t.Helper()
	c, err := s.Catalog()
	if err != nil {
		t.Fatalf("Catalog: %v (%s), want the undamaged publishers' capabilities listed", err, amp.NameOf(err))
	}
	return c
}

// wantProblem fails t unless Check reports a problem of kind.
func wantProblem(t *testing.T, s *Store, kind string) {
	t.Helper()
	ps, err := s.Check()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(ps, func(p Problem) bool { return p.Kind == kind }) {
		t.Fatalf("check problems %+v, want kind %s", ps, kind)
	}
}

// TestABundleRecordThatDoesNotDecodeFailsClosedForItsBundleAlone
//
// Attack (or damage): one installed bundle's record (bucket "bundles")
// torn or edited in the store file, or one line's high-water mark of the
// wrong size. Catalog read every bundle record strictly (for its
// revocation, its expiry and, under a freshness policy or a heartbeat, its
// staleness, the last with every line's high-water mark and pin) and
// returned store_io for the whole store at the first that did not decode:
// one publisher's damaged record made every publisher's capabilities
// unlisted, so the agent answered nothing, and Store.Bundles failed the
// same way. Check named it kind "bundle".
//
// Defence (docs/SPEC-DECISIONS.md STORE-4): a bundle whose record does
// not decode fails closed alone: whether it is revoked or expired cannot
// be read, so none of its capabilities is listed and its alias claims do
// not count; a line whose high-water mark or pin cannot be read is judged
// stale alone, as the listing already judged it; everything else is
// listed, by the catalog and by the listing (Bundles, which failed
// store_io too: /readyz unready, a mirror's snapshot never rebuilt);
// check names the record (kind "bundle_unreadable").
func TestABundleRecordThatDoesNotDecodeFailsClosedForItsBundleAlone(t *testing.T) {
	cases := []struct {
		name      string
		freshness bool // a freshness policy set: staleness is judged
		bucket    string
		edit      func([]byte) []byte
		kind      string
	}{
		{"a torn bundle record", false, bBundles, torn, ProblemBundleUnreadable},
		{"a bundle record that is not cbor", false, bBundles, notCBOR, ProblemBundleUnreadable},
		{"a torn bundle record under a freshness policy", true, bBundles, torn, ProblemBundleUnreadable},
		{"a high-water mark of 3 bytes under a freshness policy", true, bHighwater, func([]byte) []byte { return []byte{0, 0, 1} }, "meta"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := storeAt(t)
			t.Cleanup(func() { s.Close() })
			mustImport(t, s, sampleBytes(t, "translate"))
			mustImport(t, s, sampleBytes(t, "geo"))
			if tc.freshness {
				if err := s.SetFreshness("*", 5); err != nil {
					t.Fatal(err)
				}
			}
			damageRecord(t, s, tc.bucket, []byte("org.example.translate"), tc.edit)
			c := catalogNames(t, s)
			if !slices.Equal(c.Names, []string{"com.acme.geo.distance", "com.acme.geo.geocode"}) {
				t.Fatalf("catalog names %v, want com.acme.geo's two capabilities alone", c.Names)
			}
			if n, err := c.ResolveType("translate"); err == nil {
				t.Fatalf("the left-out bundle's legacy type still resolves, to %s", n)
			}
			if got, err := c.ResolveType("geocode"); err != nil || got != "com.acme.geo.geocode" {
				t.Fatalf("the undamaged bundle's type: %q, %v", got, err)
			}
			// The listing (/readyz, a mirror's snapshot, ampbundle ls)
			// lists the others, and nothing of it served.
			bs, err := s.Bundles()
			if err != nil {
				t.Fatalf("Bundles: %v, want the undamaged bundles listed", err)
			}
			listed := map[string]Bundle{}
			for _, b := range bs {
				listed[b.BundleID] = b
			}
			if g, ok := listed["com.acme.geo"]; !ok || g.FailsClosed() != "" {
				t.Fatalf("listed %+v: com.acme.geo is not listed as served", bs)
			}
			if b, ok := listed["org.example.translate"]; ok && b.FailsClosed() == "" {
				t.Fatalf("the damaged bundle is listed as served: %+v", b)
			}
			wantProblem(t, s, tc.kind)
		})
	}
}

// TestADamagedTrustRecordStillFailsTheCatalogClosed
//
// Guard of STORE-4: a line is judged on its own, but the trust state every
// judgement rests on is not a line. A trust record that does not decode
// under a freshness policy keeps failing the catalog store_io
// (docs/SPEC-DECISIONS.md TSTATE-6), never serving a bundle whose
// staleness could not be judged.
func TestADamagedTrustRecordStillFailsTheCatalogClosed(t *testing.T) {
	s := storeAt(t)
	t.Cleanup(func() { s.Close() })
	mustImport(t, s, sampleBytes(t, "translate"))
	mustImport(t, s, sampleBytes(t, "geo"))
	if err := s.SetFreshness("*", 5); err != nil {
		t.Fatal(err)
	}
	damageRecord(t, s, bTrust, []byte("example"), torn)
	if c, err := s.Catalog(); !errors.Is(err, ErrStoreIO) {
		t.Fatalf("Catalog with a damaged trust record: %v, names %v; want store_io", err, c.Names)
	}
}

// TestAnAliasRecordThatDoesNotDecodeFailsClosedForItsTypeAlone
//
// Attack (or damage): one alias record (bucket "aliases") torn or edited
// in the store file. Catalog returned store_io for the whole store at the
// first that did not decode, so every publisher's capabilities went
// unlisted; check called it "alias %q has no owner". Leaving the record
// out alone would not do: the type would then resolve by slug match, and
// a type com.acme claims ("text", for com.acme.geo.geocode) would resolve
// to org.example.translate.text, the answer of another authority.
//
// Defence (docs/SPEC-DECISIONS.md STORE-5): the type of a record that
// does not decode resolves to no capability (4002, AmbiguousAlias its one
// claim), every other type and capability is served, and check names
// the record (kind "alias_unreadable").
func TestAnAliasRecordThatDoesNotDecodeFailsClosedForItsTypeAlone(t *testing.T) {
	cases := []struct {
		name, typ string
		edit      func([]byte) []byte
	}{
		{"a torn record of another authority's type", "text", torn},
		{"a record of another authority's type that is not cbor", "text", notCBOR},
		{"a torn record of the type of the bundle that names it", "translate", torn},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := storeAt(t)
			t.Cleanup(func() { s.Close() })
			mustImport(t, s, sampleBytes(t, "translate"))
			mustImport(t, s, acmeClaiming(t, map[string]string{"text": "com.acme.geo.geocode"}))
			damageRecord(t, s, bAliases, []byte(tc.typ), tc.edit)
			c := catalogNames(t, s)
			for _, n := range []string{"com.acme.geo.distance", "com.acme.geo.geocode", "org.example.translate.text"} {
				if !slices.Contains(c.Names, n) {
					t.Fatalf("catalog names %v lack %s", c.Names, n)
				}
			}
			if got, err := c.ResolveType(tc.typ); amp.CodeOf(err) != amp.CodeCapabilityNotFound {
				t.Fatalf("ResolveType(%q) of a damaged alias record = %q, %v; want 4002", tc.typ, got, err)
			}
			if c.Aliases[tc.typ] != AmbiguousAlias {
				t.Fatalf("Aliases[%q] = %q, want the marker that names no capability", tc.typ, c.Aliases[tc.typ])
			}
			other := map[string]string{"text": "translate", "translate": "text"}[tc.typ]
			want := map[string]string{"text": "com.acme.geo.geocode", "translate": "org.example.translate.text"}[other]
			if got, err := c.ResolveType(other); err != nil || got != want {
				t.Fatalf("ResolveType(%q) = %q, %v; want %s", other, got, err, want)
			}
			wantProblem(t, s, ProblemAliasUnreadable)
		})
	}
}
