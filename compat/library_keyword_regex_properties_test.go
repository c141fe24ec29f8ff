package compat

import "testing"

// TestLibraryKeywordRegexPropertiesIsNotAnAnnotation: jsonschema
// v5.3.1 compiles "regexProperties" (its own keyword, meant for its
// draft-04 meta-schema) in every draft, draft 2020-12 included: with
// true, every member name of an object must compile as a regular
// expression. A publisher adds "regexProperties": true to a new input
// schema; draft 2020-12's meta-schema says nothing about the member, so
// the offline compiler accepts it. The checker reads any keyword it does
// not know as an annotation (keywordsC's default: "Unknown keywords are
// annotations in draft 2020-12"). Before COMPAT-10 was amended (review 53): Compatible, while the validator
// (internal/offlineschema) refuses {"(":1}, which the old schema accepts.
// Should be: every keyword the validator enforces is decided or
// undecided (here: in undecided, Unknown unless the producer carries the
// same value), or the offline compiler refuses "regexProperties" in a
// bundle schema.
func TestLibraryKeywordRegexPropertiesIsNotAnAnnotation(t *testing.T) {
	old := map[string]string{"old.json": `{"type":"object"}`}
	nw := map[string]string{"new.json": `{"type":"object","regexProperties":true}`}
	if r := witnessBackward(t, old, nw, `{"(":1}`); r.Verdict == Compatible {
		t.Fatalf("Backward is Compatible, yet the validator accepts {\"(\":1} under the old schema and refuses it under the new one")
	}
}

// libraryKeywords are the keywords jsonschema v5.3.1 (the validator of
// internal/offlineschema) reads in a draft 2020-12 schema: those
// Compiler.compileMap and newSchema compile,
// and those of its Draft2020 table ("$id", anchors, subschema
// keywords). A library upgrade that compiles another keyword must add it
// here.
var libraryKeywords = []string{
	"$schema", "$id", "$anchor", "$dynamicAnchor", "$recursiveAnchor", "$vocabulary", "$defs", "definitions",
	"$ref", "$recursiveRef", "$dynamicRef", "$comment",
	"type", "enum", "const", "minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum", "multipleOf",
	"minProperties", "maxProperties", "required", "dependentRequired", "minItems", "maxItems", "uniqueItems",
	"minLength", "maxLength", "pattern", "format", "minContains", "maxContains",
	"not", "allOf", "anyOf", "oneOf", "if", "then", "else",
	"properties", "regexProperties", "patternProperties", "additionalProperties", "propertyNames",
	"dependencies", "dependentSchemas", "contains", "prefixItems", "items", "additionalItems",
	"unevaluatedProperties", "unevaluatedItems",
	"contentEncoding", "contentMediaType", "contentSchema",
	"title", "description", "default", "readOnly", "writeOnly",
}

// TestEveryLibraryKeywordIsModelled: a keyword the validator compiles
// but the checker reads as an annotation (its default for a keyword it
// does not know) lets a publisher add an assertion the checker never
// sees, as "regexProperties" did (review 53). Every keyword of
// libraryKeywords is ignored (an annotation or structure the checker
// handles elsewhere), decided (a rule of its own) or undecided (Unknown
// unless the producer carries the same value), and in one of them only.
func TestEveryLibraryKeywordIsModelled(t *testing.T) {
	for _, kw := range libraryKeywords {
		n := 0
		for _, set := range []map[string]bool{ignored, decided, undecided} {
			if set[kw] {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%q, which the validator compiles, is read by the checker as an annotation", kw)
		}
		if n > 1 {
			t.Errorf("%q is in %d of the checker's keyword lists", kw, n)
		}
	}
}
