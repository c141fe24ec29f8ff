package resolver

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
)

// geoUnderExample returns the geo sample moved into org.example
// (bundle org.example.geo, its capabilities in the capability namespace
// org.example.translate, the one of org.example.translate.text), claiming
// the legacy type "translate" for org.example.translate.geocode, signed by
// key.
func geoUnderExample(t *testing.T, key ed25519.PrivateKey) []byte {
	t.Helper()
	d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "geo"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(key)})
	if err != nil {
		t.Fatal(err)
	}
	d.BundleID = "org.example.geo"
	for i := range d.Capabilities {
		d.Capabilities[i].Name = "org.example.translate." + strings.TrimPrefix(d.Capabilities[i].Name, "com.acme.geo.")
	}
	d.Aliases = map[string]string{"translate": "org.example.translate.geocode"}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, []ed25519.PrivateKey{key}, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestOneNamespaceHoldsTwoClaimsOfATypeAfterItsKeyRotates
//
// Attack: claimsConflict re-counts a kept claim's signers under the policy
// now (claimSigners, resolver/import.go), and a claim left without a
// trusted signer "holds the type against no one". But a key that leaves
// trust by a rotation of its scope (or a trust rm without --fail-closed)
// leaves the bundles it signed installed and served (TRUST-3: they fail
// closed only by a revocation). org.example ships org.example.translate
// claiming "translate"; its scope rotates from the publisher's key to a
// successor (the same authority, by the scope's own chain); the successor
// ships org.example.geo claiming "translate" for
// org.example.translate.geocode, a name of the very capability
// namespace of the first claim (org.example.translate). Today the second
// claim is accepted (the first's signer "speaks for nothing") while the
// first bundle is still served: one namespace, one authority, holds two
// claims of one type, so "translate" turns ambiguous for every caller.
// The invariant BUNDLE-9 states ("Two names of one namespace always
// conflict") breaks after any key change, and an authority can add one
// more candidate per rotation, past the bound on candidates the decision
// claims. (The trust rm row is the case the review 51 amendment calls
// intended for a squatter's removed key; within one namespace the
// removed key's successor is the same authority.)
//
// Want: while the kept claim's bundle is served, two claims of names in
// one namespace conflict whatever the signers re-count to
// (alias_conflict), as before the trust change.
func TestOneNamespaceHoldsTwoClaimsOfATypeAfterItsKeyRotates(t *testing.T) {
	publisher, successor := sampleKey(t, "example-publisher"), testKeyN(55)
	for _, c := range []struct {
		name   string
		change func(t *testing.T, s *Store)
	}{
		// Control: with both keys trusted (no key leaves) the second
		// claim is refused, as it must be.
		{"both keys trusted (control)", func(t *testing.T, s *Store) {
			if err := s.TrustAdd("successor", pub(successor), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
		}},
		{"rotation retires the publisher's key", func(t *testing.T, s *Store) {
			st := rotation(t, nil, 1, 1, map[string]ed25519.PrivateKey{"successor": successor}, []ed25519.PrivateKey{publisher}, publisher)
			if _, err := s.ApplyRotation(st); err != nil {
				t.Fatal(err)
			}
		}},
		{"trust rm of the publisher's key, a new key added", func(t *testing.T, s *Store) {
			if err := s.TrustAdd("successor", pub(successor), []string{"org.example"}); err != nil {
				t.Fatal(err)
			}
			if err := s.TrustRemove("example"); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := newStore(t)
			mustImport(t, s, cosigned(t, 1, publisher)) // "translate" -> org.example.translate.text
			c.change(t, s)
			cat, err := s.Catalog()
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(cat.Names, "org.example.translate.text") {
				t.Fatalf("precondition: the first bundle is no longer served (%v)", cat.Names)
			}
			_, err = importBytes(t, s, geoUnderExample(t, successor), ImportOptions{})
			if !errors.Is(err, ErrAliasConflict) {
				cat, _ := s.Catalog()
				t.Fatalf("a second org.example claim of \"translate\" while the first org.example bundle is served: %v; "+
					"TypeClaims(translate) = %v; want alias_conflict (two names of one namespace conflict)", err, cat.TypeClaims("translate"))
			}
		})
	}
}

// TestVersionRevokedClaimBlocksItsAuthorityForever
//
// Attack (availability): checkAliasClaims (resolver/import.go) judges a
// kept claim whatever its owner's state, so that a stale or expired
// bundle, which may be served again, keeps its authority to one claim
// (BUNDLE-9, review 51). A bundle whose very version a revocation
// statement revoked can never be served again: versionRevoked refuses its
// file, and no copy of its release replaces it (checkAgainstStore refuses
// the version before sameRelease is asked). Yet its claim, left out of the
// catalog, still holds the legacy type against every other bundle of its
// authority: org.example revokes org.example.translate@1 (a bad build)
// and its next product, org.example.geo, claiming "translate" for its own
// name, is refused alias_conflict by a claim nothing will ever serve,
// until an operator finds and removes the revoked bundle (nothing in the
// refusal says it is revoked).
//
// Want: a claim whose every owner is an installed version revoked by a
// statement is left out of the conflict check, as it is of the catalog;
// the new claim installs and "translate" resolves to it alone.
func TestVersionRevokedClaimBlocksItsAuthorityForever(t *testing.T) {
	publisher := sampleKey(t, "example-publisher")
	s := newStore(t)
	mustImport(t, s, cosigned(t, 1, publisher)) // "translate" -> org.example.translate.text
	res, err := s.ApplyRevocation(revocation(t, "org.example", nil,
		[]bundle.BundleVersion{{BundleID: "org.example.translate", Version: 1}}, publisher))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FailedClosed) != 1 {
		t.Fatalf("precondition: revocation result %+v, want org.example.translate@1 failed closed", res)
	}
	if _, err := importBytes(t, s, cosigned(t, 1, publisher), ImportOptions{}); err == nil {
		t.Fatal("precondition: the revoked version was imported again")
	}
	if _, err := importBytes(t, s, geoUnderExample(t, publisher), ImportOptions{}); err != nil {
		t.Fatalf("org.example's next bundle claiming \"translate\" after its only other claim's version was revoked: %v; "+
			"want it installed (the revoked version can never be served again)", err)
	}
	cat, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if name, err := cat.ResolveType("translate"); err != nil || name != "org.example.translate.geocode" {
		t.Fatalf("ResolveType(translate) = %q, %v", name, err)
	}
}
