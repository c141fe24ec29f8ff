package resolver

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"slices"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
	"github.com/ampbundle/ampbundle/capability"
)

// acmeClaiming returns the geo sample, signed by the acme publisher
// (trusted for com.acme only), with aliases as its legacy types.
func acmeClaiming(t *testing.T, aliases map[string]string) []byte {
	t.Helper()
	acme := sampleKey(t, "acme-publisher")
	d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "geo"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(acme)})
	if err != nil {
		t.Fatal(err)
	}
	d.Aliases = aliases
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{acme}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// wantAmbiguous checks that the catalog resolves typ as 4001
// ambiguous_type naming exactly candidates.
func wantAmbiguous(t *testing.T, s *Store, typ string, candidates ...string) {
	t.Helper()
	cat, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	_, err = cat.ResolveType(typ)
	var e *amp.Error
	if !errors.As(err, &e) || e.Name != capability.ErrAmbiguousType {
		t.Fatalf("ResolveType(%q) = %v, want ambiguous_type", typ, err)
	}
	if got, _ := e.Details.(map[string]any)["candidates"].([]string); !slices.Equal(got, candidates) {
		t.Fatalf("candidates %v, want %v", got, candidates)
	}
	// A reader of Aliases alone (the agent's CAP-3 filter, a catalog
	// through the admin socket) must not take one claim, nor a slug
	// match, as the answer: the marker names no capability.
	if cat.Aliases[typ] != AmbiguousAlias {
		t.Fatalf("Aliases[%q] = %q, want the ambiguity marker", typ, cat.Aliases[typ])
	}
	if _, err := capability.ResolveType(typ, cat.Aliases, cat.Names); amp.CodeOf(err) != amp.CodeCapabilityNotFound {
		t.Fatalf("ResolveType by Aliases alone: %v, want 4002", err)
	}
	remote := &Catalog{Names: cat.Names, ByName: cat.ByName, Aliases: cat.Aliases}
	if _, err := remote.ResolveType(typ); amp.CodeOf(err) != amp.CodeCapabilityNotFound {
		t.Fatalf("a catalog decoded from Aliases alone: %v, want 4002", err)
	}
}

// TestAliasSquatByAnotherNamespaceBlocksItsRelease
//
// Attack: legacy types (the keys of "aliases") are one space shared by
// every namespace, and were taken first come, first served. A publisher
// trusted only for com.acme ships a bundle of its own namespace claiming
// the legacy type "translate" (for its own com.acme.geo.geocode); from
// then on the org.example release mapping "translate" to
// org.example.translate.text was refused alias_conflict at that store: a
// key with no trust in org.example decided what org.example may install,
// and could claim every common slug ahead of time.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-9): claims whose targets lie in
// different namespaces do not conflict. Both are kept (the alias record
// holds several claims), and the type resolves as an ambiguous slug does:
// 4001 ambiguous_type naming the candidates; when one claimant goes, the
// other's claim resolves alone. alias_conflict stays between claims of one
// namespace.
func TestAliasSquatByAnotherNamespaceBlocksItsRelease(t *testing.T) {
	s := newStore(t) // acme trusted for com.acme, example for org.example
	mustImport(t, s, acmeClaiming(t, map[string]string{"translate": "com.acme.geo.geocode"}))
	if _, err := importBytes(t, s, sampleBytes(t, "translate"), ImportOptions{}); err != nil {
		t.Fatalf("a com.acme bundle's claim on legacy type \"translate\" refused the org.example release: %v", err)
	}
	wantAmbiguous(t, s, "translate", "com.acme.geo.geocode", "org.example.translate.text")

	// Within one namespace the first claim still holds.
	other := variant(t, 1, func(d *bundle.Draft) {
		d.BundleID = "org.example.translate2"
		for i := range d.Capabilities {
			d.Capabilities[i].Name = "org.example.translate.other"
		}
		d.Aliases = map[string]string{"translate": "org.example.translate.other"}
	})
	if _, err := importBytes(t, s, other, ImportOptions{}); !errors.Is(err, ErrAliasConflict) {
		t.Fatalf("a second claim in org.example.translate: %v, want alias_conflict", err)
	}

	// The squatter removed, org.example's claim resolves alone.
	if _, err := s.Remove("com.acme.geo"); err != nil {
		t.Fatal(err)
	}
	cat, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if name, err := cat.ResolveType("translate"); err != nil || name != "org.example.translate.text" {
		t.Fatalf("after the squatter's removal: %q, %v", name, err)
	}
	if cat.Aliases["translate"] != "org.example.translate.text" {
		t.Fatalf("Aliases = %v", cat.Aliases)
	}
}

// TestAliasClaimsSurviveEitherRemovalAndAVersion3Store: removing the
// first claimant keeps the other claim (the record's first claim is
// rewritten, not the record deleted), and a store of schema version 3,
// whose alias records hold one claim, is read as it is and upgraded to
// version 4 at its first writable open.
func TestAliasClaimsSurviveEitherRemovalAndAVersion3Store(t *testing.T) {
	s := storeAt(t)
	mustImport(t, s, acmeClaiming(t, map[string]string{"translate": "com.acme.geo.geocode", "geocode": "com.acme.geo.geocode"}))
	if err := s.db.Update(func(tx *bolt.Tx) error {
		return bucket(tx, bMeta).Put([]byte(kSchemaVersion), u64(schemaVersionOneClaimAliases))
	}); err != nil {
		t.Fatal(err)
	}
	s.Close()
	ro, err := Open(s.path, Options{Now: func() time.Time { return testNow }, ReadOnly: true})
	if err != nil {
		t.Fatalf("a version 3 store, read-only: %v", err)
	}
	cat, err := ro.Catalog()
	ro.Close()
	if err != nil || cat.Aliases["geocode"] != "com.acme.geo.geocode" {
		t.Fatalf("a version 3 record read: %v %v", cat, err)
	}
	s, err = Open(s.path, Options{Now: func() time.Time { return testNow }})
	if err != nil {
		t.Fatal(err)
	}
	defer checkClose(t, s)
	var v uint64
	_ = s.db.View(func(tx *bolt.Tx) error { v = getU64(bucket(tx, bMeta).Get([]byte(kSchemaVersion))); return nil })
	if v != SchemaVersion {
		t.Fatalf("after a writable open: version %d, want %d", v, SchemaVersion)
	}
	if _, err := s.Import(context.Background(), bytes.NewReader(sampleBytes(t, "translate")), ImportOptions{}); err != nil {
		t.Fatal(err)
	}
	wantAmbiguous(t, s, "translate", "com.acme.geo.geocode", "org.example.translate.text")
	if _, err := s.Remove("com.acme.geo"); err != nil { // the first claim's owner
		t.Fatal(err)
	}
	cat, err = s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if name, err := cat.ResolveType("translate"); err != nil || name != "org.example.translate.text" {
		t.Fatalf("after the first claimant's removal: %q, %v", name, err)
	}
	if cat.TypeClaims("geocode") != nil {
		t.Fatal("an alias whose only claimant was removed is still listed")
	}
}

// TestAliasClaimOfAnotherAuthorityIsKeptInEitherOrder: the org.example
// release first, then com.acme's claim on its legacy type: the claim is
// kept beside it (not refused, not replacing it), and the type is
// ambiguous.
func TestAliasClaimOfAnotherAuthorityIsKeptInEitherOrder(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, sampleBytes(t, "translate"))
	mustImport(t, s, acmeClaiming(t, map[string]string{"translate": "com.acme.geo.geocode"}))
	wantAmbiguous(t, s, "translate", "com.acme.geo.geocode", "org.example.translate.text")
	if err := s.db.View(func(tx *bolt.Tx) error {
		var ar aliasRecord
		if err := decode(bucket(tx, bAliases).Get([]byte("translate")), &ar); err != nil {
			return err
		}
		if ar.Name != "org.example.translate.text" || len(ar.More) != 1 {
			t.Errorf("record %+v: the first claim must stay first", ar)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
