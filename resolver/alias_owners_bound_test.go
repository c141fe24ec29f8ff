package resolver

import (
	"bytes"
	"crypto/ed25519"
	"fmt"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/capability"
)

// sharedTypes are the legacy types typeSharingBundle claims.
func sharedTypes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("Legacy/Shared/T%05d", i)
	}
	return out
}

// typeSharingBundle is bundle id at version, signed by the example publisher,
// carrying org.example.shared at capVersion and claiming types of
// sharedTypes for it: every such bundle is an owner of the same claims.
func typeSharingBundle(t testing.TB, id string, version uint64, capVersion string, types int) []byte {
	t.Helper()
	v, err := capability.ParseVersion(capVersion)
	if err != nil {
		t.Fatal(err)
	}
	d := &bundle.Draft{BundleID: id, Version: version, CreatedAt: testNow.Add(-time.Hour),
		Artifacts: []bundle.Source{bundle.BytesSource("schemas/in.schema.json", bundle.MediaTypeSchema, []byte(`{"type":"object"}`))},
		Capabilities: []capability.Descriptor{{Name: "org.example.shared", Version: v,
			InputSchema:  capability.SchemaRef{ArtifactKey: "schemas/in.schema.json"},
			OutputSchema: capability.SchemaRef{ArtifactKey: "schemas/in.schema.json"}}},
		Aliases: map[string]string{}}
	for _, typ := range sharedTypes(types) {
		d.Aliases[typ] = "org.example.shared"
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{sampleKey(t, "example-publisher")}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// aliasBytes is the bytes of the alias records of types: what an import
// or removal that touches them all writes.
func aliasBytes(t *testing.T, s *Store, types []string) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx *bolt.Tx) error {
		for _, typ := range types {
			n += len(bucket(tx, bAliases).Get([]byte(typ)))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

// lowerAliasOwners lowers MaxAliasClaimOwners to n for s alone.
func lowerAliasOwners(s *Store, n int) {
	lowerLimits(s, func(l *storeLimits) { l.aliasOwners = n })
}

// TestSharedClaimsDoNotMakeEachNextImportWriteMore: alias records keep
// a claim's owners inline, so every import of one authority's bundles
// sharing legacy types rewrote records as long as the owners so far:
// the bytes an import wrote grew with the bundles before it, the square
// of them in all (20 types: about 4.7 KB of alias records at the 10th
// bundle, 16.7 KB at the 40th; with 10,000 types and 255-byte bundle_ids
// the 1,000th such bundle rewrote about 2.6 GB in one transaction). What
// one import writes is now bounded by MaxAliasClaimOwners names; the
// bundles past it are refused (STORE-1).
func TestSharedClaimsDoNotMakeEachNextImportWriteMore(t *testing.T) {
	const types, bound = 20, 100
	s := newStore(t)
	lowerAliasOwners(s, bound)
	// A record is its type's key-free CBOR: the claim's name (a few
	// dozen bytes) and its owners, each a 21-byte name and its head.
	limit := types*64 + bound*(len("org.example.line000")+3)
	accepted, most := 0, 0
	for i := 1; i <= 40; i++ {
		_, err := importBytes(t, s, typeSharingBundle(t, fmt.Sprintf("org.example.line%03d", i), 1, fmt.Sprintf("1.0.%d", i), types), ImportOptions{})
		if err != nil {
			expectName(t, err, ErrTooManyAliasOwners)
			continue
		}
		accepted++
		most = max(most, aliasBytes(t, s, sharedTypes(types)))
	}
	if most > limit {
		t.Fatalf("an import wrote %d bytes of alias records (%d of 40 bundles sharing %d types accepted), more than the %d its bound allows", most, accepted, types, limit)
	}
	if accepted != bound/types {
		t.Fatalf("%d bundles accepted, want %d", accepted, bound/types)
	}
}

// TestAnImportWhoseAliasClaimsWouldHoldTooManyOwnersIsRefused: the owners
// an import's claims hold once it is installed, summed over its types,
// are bounded (MaxAliasClaimOwners), so that no import rewrites more
// than the bound's names, however many bundles share its types; a
// refused import leaves the store as it was. A replacement counts its
// bundle_id once, and another authority's claim of the same types is
// not counted against this one's (STORE-1).
func TestAnImportWhoseAliasClaimsWouldHoldTooManyOwnersIsRefused(t *testing.T) {
	const types, bound = 20, 60
	s := newStore(t)
	lowerAliasOwners(s, bound)
	for i := 1; i <= 3; i++ { // 20, 40, then 60 owners: at the bound
		mustImport(t, s, typeSharingBundle(t, fmt.Sprintf("org.example.line%03d", i), 1, fmt.Sprintf("1.0.%d", i), types))
	}
	steps := []struct {
		name string
		file []byte
		want error // nil: accepted
	}{
		{"a fourth bundle sharing the types (80 owners)", typeSharingBundle(t, "org.example.line004", 1, "1.0.4", types), ErrTooManyAliasOwners},
		{"the next version of an owner (its own name counted once: 60)", typeSharingBundle(t, "org.example.line003", 2, "1.0.6", types), nil},
		{"a fourth bundle sharing one type only (4 owners)", typeSharingBundle(t, "org.example.line005", 1, "1.0.5", 1), nil},
		{"a fifth bundle sharing the types (81 owners)", typeSharingBundle(t, "org.example.line006", 1, "1.0.7", types), ErrTooManyAliasOwners},
		{"another authority claiming the same types", acmeClaiming(t, claimAll(sharedTypes(types), "com.acme.geo.geocode")), nil},
	}
	for _, st := range steps {
		gen, before, blobs := s.Generation(), aliasBytes(t, s, sharedTypes(types)), countKeys(t, s, bBlobs)
		_, err := importBytes(t, s, st.file, ImportOptions{})
		if st.want == nil {
			if err != nil {
				t.Fatalf("%s: %v", st.name, err)
			}
			continue
		}
		expectName(t, err, ErrTooManyAliasOwners)
		if s.Generation() != gen || aliasBytes(t, s, sharedTypes(types)) != before || countKeys(t, s, bBlobs) != blobs || countKeys(t, s, bPending) != 0 {
			t.Fatalf("%s: the refused import changed the store", st.name)
		}
	}
	for _, id := range []string{"org.example.line001", "org.example.line005"} {
		if _, err := s.Remove(id); err != nil {
			t.Fatal(err)
		}
	}
	mustImport(t, s, typeSharingBundle(t, "org.example.line004", 1, "1.0.4", types)) // room again: 60
}

func claimAll(types []string, name string) map[string]string {
	m := map[string]string{}
	for _, typ := range types {
		m[typ] = name
	}
	return m
}

func countKeys(t *testing.T, s *Store, b string) int {
	t.Helper()
	n := 0
	if err := s.db.View(func(tx *bolt.Tx) error { n = bucket(tx, b).Stats().KeyN; return nil }); err != nil {
		t.Fatal(err)
	}
	return n
}
