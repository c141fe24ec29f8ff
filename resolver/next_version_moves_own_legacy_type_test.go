package resolver

import (
	"bytes"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestNextVersionCannotMoveItsOwnLegacyType
//
// Attack (availability, the publisher's own claim): a new version's alias
// claims were judged against every kept claim, including the ones only
// the version being replaced owns, which the same transaction
// uninstalls. A publisher renaming its capability
// (org.example.translate.text -> org.example.translate.text2, the case
// BUNDLE-7 names) and moving its legacy type "translate" to the new name
// was refused alias_conflict by its own previous version: the bundle
// could never move a legacy type without being removed first (and then
// re-imported over its high-water mark).
//
// Defence (docs/SPEC-DECISIONS.md BUNDLE-9): claims owned only by the
// bundle_id being replaced are left out of the conflict check, as its
// descriptors are; the next version installs, "translate" resolves to the
// new name alone, and CheckImport judges it the same.
func TestNextVersionCannotMoveItsOwnLegacyType(t *testing.T) {
	s := newStore(t)
	mustImport(t, s, variant(t, 1, nil)) // "translate" -> org.example.translate.text
	v2 := variant(t, 2, func(d *bundle.Draft) {
		for i := range d.Capabilities {
			d.Capabilities[i].Name = "org.example.translate.text2"
		}
		d.Aliases = map[string]string{"translate": "org.example.translate.text2"}
	})
	if _, err := s.CheckImport(bytes.NewReader(v2)); err != nil {
		t.Fatalf("CheckImport of the next version moving its own legacy type: %v", err)
	}
	if _, err := importBytes(t, s, v2, ImportOptions{}); err != nil {
		t.Fatalf("the next version of the same bundle moving its own legacy type: %v", err)
	}
	cat, err := s.Catalog()
	if err != nil {
		t.Fatal(err)
	}
	if name, err := cat.ResolveType("translate"); err != nil || name != "org.example.translate.text2" {
		t.Fatalf("ResolveType(translate) = %q, %v", name, err)
	}
	if got := cat.TypeClaims("translate"); !slices.Equal(got, []string{"org.example.translate.text2"}) {
		t.Fatalf("TypeClaims(translate) = %v: the replaced version's claim must be gone", got)
	}
}
