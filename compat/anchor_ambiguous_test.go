package compat

import "testing"

// TestAmbiguousAnchorIsNotResolved: "$anchor" names a schema location
// only where a subschema can stand (JSON Schema 2020-12 §8.2.2), and the
// validator the agent runs (internal/offlineschema over jsonschema
// v5.3.1) reads "$dynamicAnchor" as an anchor too; it indexes no anchor
// inside an unknown keyword, and where two subschemas declare one name
// it picks one in no fixed order. A checker that takes the first anchor
// of a name it finds compares a decoy (a string schema) while the
// validator may enforce the other (an integer): it said Compatible for a
// change that refuses the old requests. An anchor that does not name
// exactly one subschema of its document (schemagraph.Resource.Duplicates,
// or an "$anchor" and a "$dynamicAnchor" of one name in two places) is not
// followed: unresolved_ref, Unknown. (An anchor inside an unknown
// keyword is not indexed at all: schemagraph.Index walks only subschemas.)
func TestAmbiguousAnchorIsNotResolved(t *testing.T) {
	for _, tc := range []struct {
		name string
		new  string
		// refuses: the validator is known to refuse the old request
		// (where it picks one of two anchors, it is not known which);
		// the checker may then follow the anchor the validator sees.
		refuses bool
	}{
		{"decoy_in_unknown_keyword", `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#s"}},
			"$defs":{"real":{"$anchor":"s","type":"integer"}},
			"$decoy":{"$anchor":"s","type":"string"}}`, true},
		{"declared_twice", `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#s"}},
			"$defs":{"a":{"$anchor":"s","type":"string"},"b":{"$anchor":"s","type":"integer"}}}`, false},
		{"anchor_and_dynamic_anchor", `{"type":"object","required":["n"],"properties":{"n":{"$ref":"#s"}},
			"$defs":{"a":{"$anchor":"s","type":"string"},"b":{"$dynamicAnchor":"s","type":"integer"}}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"new.json": tc.new}
			if tc.refuses && !validatorRefuses(t, files, "new.json", `{"n":"hello"}`) {
				t.Fatalf("precondition: the validator accepts the old request; the decoy anchor is what it enforces")
			}
			r := checkAgainstOldString(files)
			if r.Verdict == Compatible {
				t.Fatalf("Backward is Compatible although \"#s\" names more than one subschema (or one the validator does not see)")
			}
			if !tc.refuses && !hasRule(r, "unresolved_ref") {
				t.Fatalf("Backward %s %+v, want unresolved_ref", r.Verdict, r.Findings)
			}
		})
	}
}
