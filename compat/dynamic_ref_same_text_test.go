package compat

import "testing"

// TestDynamicRefOfTheSameTextIsNotTheSameSchema: a publisher
// trusted for one namespace ships a new input schema whose "$dynamicRef"
// (or "$recursiveRef", which jsonschema v5.3.1 still compiles in a draft
// 2020-12 document) is written exactly as in the old schema, while the
// subschema it names, in "$defs" or in another artifact, changed from a
// string to an integer. The checker does not follow these references:
// "$dynamicRef" is an undecided keyword, accepted when a producer part
// carries the same value (sameKeyword), and containsRef only looks for
// reference keywords inside objects, so the bare string value "#a"
// "holds no reference": same text, no finding, and "$defs" is ignored.
// Before COMPAT-10 was amended (review 53): Compatible, while the validator (internal/offlineschema)
// accepts "x" under the old schema and refuses it under the new one.
// Should be: a reference keyword's value is never the same by text
// (its target depends on the base and the dynamic scope): Unknown
// (undecided_keyword), unless the checker resolves both and compares the
// targets.
func TestDynamicRefOfTheSameTextIsNotTheSameSchema(t *testing.T) {
	for _, tc := range []struct {
		name     string
		old, new map[string]string
		inst     string
	}{
		{"dynamicRef to an anchor of $defs",
			map[string]string{"old.json": `{"$dynamicRef":"#a","$defs":{"a":{"$dynamicAnchor":"a","type":"string"}}}`},
			map[string]string{"new.json": `{"$dynamicRef":"#a","$defs":{"a":{"$dynamicAnchor":"a","type":"integer"}}}`},
			`"x"`},
		{"dynamicRef by pointer",
			map[string]string{"old.json": `{"type":"object","properties":{"n":{"$dynamicRef":"#/$defs/a"}},"$defs":{"a":{"type":"string"}}}`},
			map[string]string{"new.json": `{"type":"object","properties":{"n":{"$dynamicRef":"#/$defs/a"}},"$defs":{"a":{"type":"integer"}}}`},
			`{"n":"x"}`},
		{"dynamicRef to another artifact",
			map[string]string{"old.json": `{"$dynamicRef":"t.json"}`, "t.json": `{"type":"string"}`},
			map[string]string{"new.json": `{"$dynamicRef":"t.json"}`, "t.json": `{"type":"integer"}`},
			`"x"`},
		{"recursiveRef by pointer",
			map[string]string{"old.json": `{"$recursiveRef":"#/$defs/a","$defs":{"a":{"type":"string"}}}`},
			map[string]string{"new.json": `{"$recursiveRef":"#/$defs/a","$defs":{"a":{"type":"integer"}}}`},
			`"x"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := witnessBackward(t, tc.old, tc.new, tc.inst)
			if r.Verdict == Compatible {
				t.Fatalf("Backward is Compatible, yet the validator accepts %s under the old schema and refuses it under the new one", tc.inst)
			}
		})
	}
}
