package compat

import "testing"

// TestUnevaluatedItemsIsComparedWithTheKeywordsThatEvaluateItems:
// "unevaluatedItems" was accepted when a producer part carried the same
// text (keywordsC, undecided → sameKeyword). But what it refuses depends
// on the items its own schema's other keywords evaluate ("prefixItems",
// "items", "contains", in-place applicators): the same text in two
// schemas whose siblings differ refuses different items.
//
// Attack: old {"prefixItems": [{}], "unevaluatedItems": false} accepts
// [1]; new {"unevaluatedItems": false} accepts only []. Backward said
// Compatible. Want: not Compatible (Unknown) unless the whole group of
// item-evaluating keywords is the same (itemEvaluating).
func TestUnevaluatedItemsIsComparedWithTheKeywordsThatEvaluateItems(t *testing.T) {
	for _, tc := range []struct{ name, old, new, inst string }{
		{"prefixItems dropped", `{"type": "array", "prefixItems": [{}], "unevaluatedItems": false}`,
			`{"type": "array", "unevaluatedItems": false}`, `[1]`},
		{"contains dropped", `{"type": "array", "contains": {"const": 1}, "unevaluatedItems": false}`,
			`{"type": "array", "unevaluatedItems": false}`, `[1]`},
		{"applicator changed", `{"type": "array", "allOf": [{"prefixItems": [{}]}], "unevaluatedItems": false}`,
			`{"type": "array", "allOf": [{}], "unevaluatedItems": false}`, `[1]`},
		{"behind a reference", `{"type": "array", "prefixItems": [{}], "unevaluatedItems": false}`,
			`{"type": "array", "$ref": "#/$defs/p", "unevaluatedItems": false, "$defs": {"p": {}}}`, `[1]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := witnessBackward(t, map[string]string{"old.json": tc.old}, map[string]string{"new.json": tc.new}, tc.inst)
			if r.Verdict == Compatible {
				t.Fatalf("Backward = Compatible for a change the validator shows breaking on %s: %+v", tc.inst, r)
			}
		})
	}
	// The whole group the same: still decided.
	same := `{"type": "array", "prefixItems": [{"type": "string"}], "allOf": [{"contains": {}}], "unevaluatedItems": false}`
	if r := backwardOf(same, same); r.Verdict != Compatible {
		t.Fatalf("the same item group: Backward = %+v, want compatible", r)
	}
}
