package a2acard

import (
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestPinIDThatFoldsIntoAnotherIsRefused: our extension's params give
// each capability id one bundle and schema pin, and a client finds the
// pin of the skill it invokes by that id. The ids are a store's
// ("name:version", printable ASCII), the same ids the AGH projection
// refuses in any other alphabet (docs/SPEC-DECISIONS.md AGH-15).
//
// Attack: a hostile agent signs a card whose params pin
// "org.example.translate.text:2.1.0" to the honest schemas and
// "org.example.tran\u017flate.text:2.1.0" (long s), or one with a Kelvin
// sign, a fullwidth letter or a zero-width space, to others. A2A-13
// compares ids byte for byte, so Verify reported the card valid: an
// exact reader (an auditor) sees one pin for the id, a reader matching
// ids with strings.EqualFold, NFKC or a collation that drops format
// characters sees two, and keeps the first or the last by their order.
//
// Before A2A-22: each of them verified. Should: card_invalid, quoting no
// id; so are an empty id, one with a space and one over 512 bytes. An id
// differing from another only in ASCII case still verifies (ids are
// case-sensitive: a SemVer pre-release "RC1" and "rc1" are two versions).
func TestPinIDThatFoldsIntoAnotherIsRefused(t *testing.T) {
	const honest = "org.example.translate.text:2.1.0"
	const evilPin = "sha-256:0000000000000000000000000000000000000000000000000000000000000000"
	for _, tc := range []struct {
		name, id string
		ok       bool
	}{
		{"long s", "org.example.tran\u017flate.text:2.1.0", false},
		{"Kelvin sign, which folds to k", "org.example.\u212ait:2.1.0", false},
		{"fullwidth letter", "org.example.\uff54ranslate.text:2.1.0", false},
		{"zero-width space", "org.example.trans\u200blate.text:2.1.0", false},
		{"space", "org.example.translate.text :2.1.0", false},
		{"empty", "", false},
		{"over 512 bytes", strings.Repeat("a", 513), false},
		{"ASCII case only", "ORG.EXAMPLE.TRANSLATE.TEXT:2.1.0", true},
		{"512 bytes", strings.Repeat("a", 512), true},
	} {
		card := signTree(t, withOwnParams(unsignedVectorTree(t), func(p jcs.Object) jcs.Object {
			e := get(p, "capabilities").([]any)[0].(jcs.Object)
			if get(e, "id") != honest {
				t.Fatalf("the vector's pin is not %s", honest)
			}
			twin := set(set(append(jcs.Object{}, e...), "id", tc.id), "input_schema", evilPin)
			return set(p, "capabilities", []any{e, twin})
		}))
		_, err := Verify(card, vectorPub(), "")
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v; want it to verify", tc.name, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: verified; a reader that folds ids finds two pins for %s", tc.name, honest)
		case !tc.ok:
			wantName(t, err, ErrInvalid)
			if tc.id != "" && strings.Contains(err.Error(), tc.id) {
				t.Errorf("%s: the refusal quotes the id", tc.name)
			}
		}
	}
}
