package compat

import "testing"

// TestUnevaluatedPropertiesSeesOnlyItsOwnSchema: an
// "unevaluatedProperties" sees the members its own schema evaluates
// (its adjacent keywords and what its "$ref" and "allOf" reach), not
// those a parent or a sibling branch of the flattened conjunction
// evaluates. The checker credited every part of the conjunction
// (evaluatedIn by scope), so a closed branch looked open for its
// parent's properties; and it did not credit an "unevaluatedProperties"
// below, which evaluates every member reaching it, so a producer looked
// closed where it is open.
//
// Attack (acceptor): old {"properties": {"a": {}}, "additionalProperties":
// false} accepts {"a": 1}; new {"properties": {"a": {}}, "allOf":
// [{"unevaluatedProperties": false}]} refuses it (the branch evaluates
// nothing); Backward said Compatible. Attack (producer): old {"allOf":
// [{"unevaluatedProperties": {}}], "unevaluatedProperties": false}
// accepts {"x": 1}; new {"additionalProperties": false} refuses it;
// Backward said Compatible. Want: not Compatible, as the validator shows.
func TestUnevaluatedPropertiesSeesOnlyItsOwnSchema(t *testing.T) {
	closedOld := `{"type": "object", "properties": {"a": {}}, "additionalProperties": false}`
	for _, tc := range []struct{ name, old, new, inst string }{
		{"closed branch under listed parent", closedOld,
			`{"type": "object", "properties": {"a": {}}, "allOf": [{"unevaluatedProperties": false}]}`, `{"a": 1}`},
		{"closed target of a reference", closedOld,
			`{"type": "object", "properties": {"a": {}}, "$ref": "#/$defs/c", "$defs": {"c": {"unevaluatedProperties": false}}}`, `{"a": 1}`},
		{"closed sibling branch", closedOld,
			`{"type": "object", "allOf": [{"properties": {"a": {}}}, {"unevaluatedProperties": false}]}`, `{"a": 1}`},
		{"producer opened below its closing keyword",
			`{"type": "object", "allOf": [{"unevaluatedProperties": {}}], "unevaluatedProperties": false}`,
			`{"type": "object", "additionalProperties": false}`, `{"x": 1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := witnessBackward(t, map[string]string{"old.json": tc.old}, map[string]string{"new.json": tc.new}, tc.inst)
			if r.Verdict == Compatible {
				t.Fatalf("Backward = Compatible for a change the validator shows breaking on %s: %+v", tc.inst, r)
			}
		})
	}
	// What its own schema evaluates still counts, through allOf and $ref.
	own := `{"type": "object", "allOf": [{"properties": {"a": {}}}], "$ref": "#/$defs/b", "unevaluatedProperties": false, "$defs": {"b": {"properties": {"b": {}}}}}`
	if r := backwardOf(`{"type": "object", "properties": {"a": {}, "b": {}}, "additionalProperties": false}`, own); r.Verdict != Compatible {
		t.Fatalf("members its own schema evaluates: Backward = %+v, want compatible", r)
	}
}
