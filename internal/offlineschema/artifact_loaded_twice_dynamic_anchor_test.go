package offlineschema

import "testing"

// Attack: one artifact loaded twice. jsonschema v5.3.1 keeps a
// document per URL it loaded it by, so d.json, reached once by its
// synthetic URL ("d.json") and once by its "$id"
// ("https://example.com/d#/..."), is two compiled copies, but the anchor
// scan (session.checkAnchors) counts each artifact key once. d.json
// declares "$dynamicAnchor": "meta" in two embedded resources, x (a
// string) and y (a number): two in one document, none elsewhere, so
// ambiguousDynamicAnchor let it through. The "$dynamicRef": "x#meta" is
// compiled in the second copy, its static target T is that copy's x, and
// the dynamic scope passes through the first copy's root, whose candidate
// list [x, y] (map order) has two entries that are not T: the library
// takes the first. Before the fix: the string "s" was accepted on some
// compiles and rejected on others (about 35/5 of 40). It is refused
// (invalid_schema) every time: a document counts once per URL the library
// loaded it by (session.byURL), not once per key (docs/SPEC-DECISIONS.md,
// SCHEMA-6). The second case loads d.json (no "$id") twice by two
// spellings of its synthetic URL ("d.json" and "%64.json": one key, two
// URLs to the library).
func TestArtifactLoadedTwiceDoublesDynamicAnchorCandidates(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
	}{
		{"by synthetic url and by $id", map[string]string{
			"s.json": `{"allOf": [{"$ref": "d.json"}], "$defs": {"go": {"$ref": "https://example.com/d#/$defs/dr"}}}`,
			"d.json": `{"$id": "https://example.com/d", "$ref": "ampbundle:///s.json#/$defs/go", "$defs": {
				"x": {"$id": "x", "$dynamicAnchor": "meta", "type": "string"},
				"y": {"$id": "y", "$dynamicAnchor": "meta", "type": "number"},
				"dr": {"$dynamicRef": "x#meta"}}}`,
		}},
		{"by two spellings of its synthetic url", map[string]string{
			"s.json": `{"allOf": [{"$ref": "d.json"}], "$defs": {"go": {"$ref": "%64.json#/$defs/dr"}}}`,
			"d.json": `{"$ref": "ampbundle:///s.json#/$defs/go", "$defs": {
				"x": {"$id": "https://example.com/x", "$dynamicAnchor": "meta", "type": "string"},
				"y": {"$id": "https://example.com/y", "$dynamicAnchor": "meta", "type": "number"},
				"dr": {"$dynamicRef": "https://example.com/x#meta"}}}`,
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := compileOutcomes(t, tc.files, "s", 40)
			if got["refused"] != 40 {
				t.Fatalf("compiled 40 times: %v; want invalid_schema every time (two copies of d.json give four candidates)", got)
			}
			quickAgrees(t, tc.files, true)
		})
	}
}

// The other side: a document loaded under two URLs that declares a
// "$dynamicAnchor" name once per copy still compiles (one candidate per
// copy's list; its static target is it).
func TestArtifactLoadedTwiceWithOneDynamicAnchorStillCompiles(t *testing.T) {
	files := map[string]string{
		"s.json": `{"allOf": [{"$ref": "d.json"}, {"$ref": "https://example.com/d"}]}`,
		"d.json": `{"$id": "https://example.com/d", "$dynamicAnchor": "meta", "type": "string"}`,
	}
	got := compileOutcomes(t, files, "s", 10)
	if got["accepted"] != 10 {
		t.Fatalf("compiled 10 times: %v; want \"s\" accepted every time", got)
	}
}
