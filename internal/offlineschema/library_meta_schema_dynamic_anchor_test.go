package offlineschema

import "testing"

// Attack: the meta-schemas the library holds itself, the
// built-in 2020-12 meta-schema and its vocabulary meta-schemas, never pass
// through the Loader, so the anchor scan did not count what they declare.
// Each declares "$dynamicAnchor": "meta" at its root and holds
// "$dynamicRef": "#meta" under "not", "$defs", ... A publisher's document
// "$ref"s one of them and declares "meta" in two embedded resources that
// disagree (a string, a number). The scan counted two in one document,
// none elsewhere, and passed it (ambiguousDynamicAnchor allows two when no
// other loaded document declares the name), but the "$dynamicRef"'s static
// target T lies in the library's meta-schema, so at the root of the
// dynamic scope the library takes the first of the root's two candidates
// in Go map order. Before the fix: one value was accepted on some compiles
// and rejected on others (about 28/12 of 40). It is refused
// (invalid_schema) every time, and by the quick check: each library
// meta-schema the compiled schema reaches counts as one more loaded
// document declaring "meta" (libraryMetaSchemas; docs/SPEC-DECISIONS.md,
// SCHEMA-6).
func TestLibraryMetaSchemaDynamicAnchorIsNotCountedSoDynamicRefIsNondeterministic(t *testing.T) {
	cases := []struct {
		name, ref string
		value     any
	}{
		{"applicator vocabulary", "https://json-schema.org/draft/2020-12/meta/applicator", map[string]any{"not": "s"}},
		{"built-in 2020-12 meta-schema", "https://json-schema.org/draft/2020-12/schema", map[string]any{"not": "s"}},
		{"core vocabulary", "https://json-schema.org/draft/2020-12/meta/core", map[string]any{"$defs": map[string]any{"a": "s"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"s.json": `{
				"allOf": [{"$ref": "` + tc.ref + `"}],
				"$defs": {
					"x": {"$id": "https://example.com/x", "$dynamicAnchor": "meta", "type": "string"},
					"y": {"$id": "https://example.com/y", "$dynamicAnchor": "meta", "type": "number"}}}`}
			got := compileOutcomes(t, files, tc.value, 40)
			if got["refused"] != 40 {
				t.Fatalf("compiled 40 times: %v; want invalid_schema every time (the library's \"meta\" is a third candidate)", got)
			}
			quickAgrees(t, files, true)
		})
	}
}

// The other side: a schema that reaches a library meta-schema and
// declares "meta" once still compiles (one candidate of its own, which
// the library's "$dynamicRef": "#meta" under "not" takes: a string).
func TestLibraryMetaSchemaWithOneDynamicAnchorStillCompiles(t *testing.T) {
	files := map[string]string{"s.json": `{
		"allOf": [{"$ref": "https://json-schema.org/draft/2020-12/meta/applicator"}],
		"$defs": {"x": {"$id": "https://example.com/x", "$dynamicAnchor": "meta", "type": "string"}}}`}
	got := compileOutcomes(t, files, map[string]any{"not": "s"}, 10)
	if got["accepted"] != 10 {
		t.Fatalf("compiled 10 times: %v; want {\"not\": \"s\"} accepted every time", got)
	}
}
