package compat

import "testing"

// backwardOf is Backward over one old and one new schema, each the
// artifact "old.json" / "new.json" of its own source.
func backwardOf(oldSchema, newSchema string) Report {
	return Backward(NewSource(memLoader{files: map[string][]byte{"old.json": []byte(oldSchema)}}), "old.json",
		NewSource(memLoader{files: map[string][]byte{"new.json": []byte(newSchema)}}), "new.json")
}

// TestPatternPropertiesOnOneSideLeaveUnlistedNamesUndecided: objects()
// checks unlisted member names ignoring patternProperties
// (samePatterns) only when that ignores nothing that decides: before,
// it did so whenever no acceptor part had patterns, so the producer's
// own patterns were ignored, as if every unlisted name went to its
// additionalProperties; and an acceptor part that closes the object
// (additionalProperties or unevaluatedProperties false) without the
// patterns next to it was read as if it had them.
//
// Attack: old {"properties": {"a": {}}, "additionalProperties": false,
// "patternProperties": {"^b": {}}} accepts {"b": 1}; the new version
// drops the pattern and refuses it, yet Backward said Compatible (the
// unlisted name checked as false ⊆ false). Likewise a new version that
// keeps the pattern but closes the object in another allOf branch.
// Want: not Compatible, as the validator shows on the witness.
func TestPatternPropertiesOnOneSideLeaveUnlistedNamesUndecided(t *testing.T) {
	for _, tc := range []struct{ name, old, new, inst string }{
		{"dropped, additionalProperties",
			`{"type": "object", "properties": {"a": {}}, "additionalProperties": false, "patternProperties": {"^b": {}}}`,
			`{"type": "object", "properties": {"a": {}}, "additionalProperties": false}`, `{"b": 1}`},
		{"dropped, unevaluatedProperties",
			`{"type": "object", "properties": {"a": {}}, "unevaluatedProperties": false, "patternProperties": {"^b": {}}}`,
			`{"type": "object", "properties": {"a": {}}, "unevaluatedProperties": false}`, `{"b": 1}`},
		{"closed in another branch",
			`{"type": "object", "patternProperties": {"^b": {}}, "additionalProperties": false}`,
			`{"type": "object", "allOf": [{"patternProperties": {"^b": {}}}, {"additionalProperties": false}]}`, `{"b": 1}`},
		{"closed by unevaluatedProperties in another branch",
			`{"type": "object", "patternProperties": {"^b": {}}, "additionalProperties": false}`,
			`{"type": "object", "patternProperties": {"^b": {}}, "allOf": [{"unevaluatedProperties": false}]}`, `{"b": 1}`},
		{"different patterns",
			`{"type": "object", "patternProperties": {"^b": {}}, "additionalProperties": false}`,
			`{"type": "object", "patternProperties": {"^c": {}}, "additionalProperties": false}`, `{"b": 1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := witnessBackward(t, map[string]string{"old.json": tc.old}, map[string]string{"new.json": tc.new}, tc.inst)
			if r.Verdict == Compatible {
				t.Fatalf("Backward = Compatible for a change the validator shows breaking on %s: %+v", tc.inst, r)
			}
		})
	}
}

// TestSamePatternsOnBothSidesStayDecided: the same patterns on both
// sides, next to each closing keyword, still let unlisted names be
// decided (the tightening above must not make every pattern Unknown).
func TestSamePatternsOnBothSidesStayDecided(t *testing.T) {
	old := `{"type": "object", "properties": {"a": {}}, "patternProperties": {"^b": {"type": "string"}}, "additionalProperties": false}`
	for _, tc := range []struct {
		name, new string
		want      Verdict
	}{
		{"loosened", `{"type": "object", "properties": {"a": {}}, "patternProperties": {"^b": {"type": "string"}}, "additionalProperties": {}}`, Compatible},
		{"same", old, Compatible},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := backwardOf(old, tc.new); r.Verdict != tc.want {
				t.Fatalf("Backward = %+v, want %s", r, tc.want)
			}
		})
	}
}
