package resolver

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
	"github.com/ampbundle/ampbundle/bundlebuild"
)

// geoSignedBy returns the geo sample (com.acme.geo.geocode) signed by
// keys, with aliases as its legacy types and optional edits.
func geoSignedBy(t *testing.T, aliases map[string]string, edit func(d *bundle.Draft), keys ...ed25519.PrivateKey) []byte {
	t.Helper()
	d, err := bundlebuild.LoadSource(filepath.Join(samplesDir, "geo"), bundlebuild.SourceOptions{CreatedAt: testNow.Add(-time.Hour), Signer: pub(keys[0])})
	if err != nil {
		t.Fatal(err)
	}
	d.Aliases = aliases
	if edit != nil {
		edit(d)
	}
	var buf bytes.Buffer
	if _, err := bundle.Write(&buf, d, keys, bundle.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestAliasSquatByANarrowScopeBlocksTheBroadKeysRelease
//
// Attack: a claim of a legacy type was judged by the new bundle's signers
// alone: it conflicted when every one of them spoke for the namespace of
// the kept claim. A key trusted for a broad scope (a site's own signing
// key, trusted for "*") speaks for every namespace, so a squatter trusted
// only for com.acme that claimed the legacy type "translate" first made
// the broad key's org.example release alias_conflict, while in the other
// order both claims were kept (com.acme's signers do not speak for
// org.example): whoever a hostile mirror delivered first decided whether
// the release installed, the very fault BUNDLE-9 removed.
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-9): two claims conflict only when
// each side's counting signers (the kept claim's re-counted under the
// policy now) all speak for the other's namespace, a symmetric relation:
// the same outcome in either order. Claims of one authority (the same
// broad key on both sides) still conflict in either order.
func TestAliasSquatByANarrowScopeBlocksTheBroadKeysRelease(t *testing.T) {
	site := testKeyN(51)
	open := func(t *testing.T) *Store {
		s := newStore(t) // example for org.example, acme for com.acme
		if err := s.TrustAdd("site", pub(site), []string{"*"}); err != nil {
			t.Fatal(err)
		}
		return s
	}
	release := cosigned(t, 1, site) // org.example.translate, "translate" -> org.example.translate.text
	claim := map[string]string{"translate": "com.acme.geo.geocode"}
	for _, c := range []struct {
		name     string
		other    []byte
		conflict bool // the second import is refused alias_conflict
	}{
		{"a com.acme key's claim", acmeClaiming(t, claim), false},
		{"the same broad key's claim", geoSignedBy(t, claim, nil, site), true},
		{"a claim the broad key co-signed with com.acme's", geoSignedBy(t, claim, nil, sampleKey(t, "acme-publisher"), site), false},
	} {
		for _, order := range []string{"release first", "other first"} {
			t.Run(c.name+"/"+order, func(t *testing.T) {
				s := open(t)
				first, second := release, c.other
				if order == "other first" {
					first, second = c.other, release
				}
				mustImport(t, s, first)
				_, err := importBytes(t, s, second, ImportOptions{})
				switch {
				case c.conflict && !errors.Is(err, ErrAliasConflict):
					t.Fatalf("one authority's second claim of \"translate\": %v, want alias_conflict", err)
				case !c.conflict && err != nil:
					t.Fatalf("another authority's claim of \"translate\" refused the second import: %v (either order must keep both)", err)
				case !c.conflict:
					wantAmbiguous(t, s, "translate", "com.acme.geo.geocode", "org.example.translate.text")
				}
			})
		}
	}
}

// TestAliasClaimOfAKeyNoLongerTrustedBlocksAnotherAuthority
//
// Attack: the kept claim's side is re-counted under the policy now; a
// squatter whose key the operator removed from trust (its bundle stays
// installed until removed) must not hold the type against a release whose
// signers speak for the squatter's namespace: its key speaks for nothing
// now, so its claim is no one's authority over that release's namespace.
// Both are kept (a claim is never redirected, only made ambiguous).
func TestAliasClaimOfAKeyNoLongerTrustedBlocksAnotherAuthority(t *testing.T) {
	site := testKeyN(53)
	s := newStore(t)
	if err := s.TrustAdd("site", pub(site), []string{"*"}); err != nil {
		t.Fatal(err)
	}
	mustImport(t, s, acmeClaiming(t, map[string]string{"translate": "com.acme.geo.geocode"}))
	if err := s.TrustRemove("acme"); err != nil {
		t.Fatal(err)
	}
	if _, err := importBytes(t, s, cosigned(t, 1, site), ImportOptions{}); err != nil {
		t.Fatalf("a claim whose only signer is no longer trusted refused the release: %v", err)
	}
}
