package offlineschema

import (
	"testing"
)

// A publisher's schema that declares one anchor name in two places of one
// resource, the two targets disagreeing: the library resolves "#name" to
// one of them in Go map order, so the same value was accepted on one
// compile and refused on the next (35 and 5 of 40). Compile, and the
// quick check that must refuse what Compile refuses, refuse it every
// time, without quoting the name.
func TestDuplicateAnchorIsRefusedEveryTime(t *testing.T) {
	const secret = "peerChosenAnchor"
	cases := []struct {
		name string
		doc  string
	}{
		{"$anchor twice", `{"$ref": "#peerChosenAnchor", "$defs": {
			"a": {"$anchor": "peerChosenAnchor", "type": "string"},
			"b": {"$anchor": "peerChosenAnchor", "type": "number"}}}`},
		{"$dynamicAnchor twice", `{"$ref": "#peerChosenAnchor", "$defs": {
			"a": {"$dynamicAnchor": "peerChosenAnchor", "type": "string"},
			"b": {"$dynamicAnchor": "peerChosenAnchor", "type": "number"}}}`},
		{"$anchor and $dynamicAnchor", `{"$ref": "#peerChosenAnchor", "$defs": {
			"a": {"$anchor": "peerChosenAnchor", "type": "string"},
			"b": {"$dynamicAnchor": "peerChosenAnchor", "type": "number"}}}`},
		{"root and subschema", `{"$anchor": "peerChosenAnchor", "properties": {"p": {"$ref": "#peerChosenAnchor"}},
			"items": {"$anchor": "peerChosenAnchor", "type": "number"}}`},
		{"embedded resource of the same uri", `{"$id": "https://example.com/s", "$ref": "#peerChosenAnchor", "$defs": {
			"a": {"$anchor": "peerChosenAnchor", "type": "string"},
			"b": {"$id": "https://example.com/s", "$defs": {"c": {"$anchor": "peerChosenAnchor", "type": "number"}}}}}`},
		{"draft-07 fragment $id twice", `{"$schema": "http://json-schema.org/draft-07/schema#", "$ref": "#peerChosenAnchor", "definitions": {
			"a": {"$id": "#peerChosenAnchor", "type": "string"},
			"b": {"$id": "#peerChosenAnchor", "type": "number"}}}`},
		{"in a referenced document", `{"$ref": "other.json#peerChosenAnchor"}`},
		{"2020 additionalItems, walked by the library", `{"$ref": "#peerChosenAnchor", "$defs": {
			"a": {"$anchor": "peerChosenAnchor", "type": "string"}},
			"additionalItems": {"$anchor": "peerChosenAnchor", "type": "number"}}`},
	}
	other := `{"$defs": {"a": {"$anchor": "peerChosenAnchor", "type": "string"}, "b": {"$anchor": "peerChosenAnchor", "type": "number"}}}`
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"s.json": tc.doc, "other.json": other}
			for range 40 {
				_, err := Compile(newLoader(files), "s.json", Options{})
				noLeak(t, ampErr(t, err, ErrInvalidSchema, 0), secret)
			}
			q := NewQuickCheck()
			for _, k := range []string{"s.json", "other.json"} {
				_, _ = q.Add(k, []byte(files[k]))
			}
			ampErr(t, q.Check(newLoader(files), "s.json", Options{}), ErrInvalidSchema, 0)
		})
	}
}

// What is not two declarations of one name in one resource still
// compiles: one subschema declaring a name with both keywords, a name
// declared once in each of two resources, anchor-shaped data, and
// "$anchor" in a draft-07 document (an unknown keyword there).
func TestSingleAnchorDeclarationsStillCompile(t *testing.T) {
	cases := []struct {
		name string
		doc  string
	}{
		{"both keywords on one subschema", `{"$ref": "#x", "$defs": {"a": {"$anchor": "x", "$dynamicAnchor": "x", "type": "string"}}}`},
		{"two resources", `{"$id": "https://example.com/s", "$ref": "#x", "$defs": {
			"a": {"$anchor": "x", "type": "string"},
			"b": {"$id": "https://example.com/t", "$defs": {"c": {"$anchor": "x", "type": "number"}}}}}`},
		{"data", `{"$anchor": "x", "enum": [{"$anchor": "x"}], "const": {"$anchor": "x"}, "default": {"$anchor": "x"}}`},
		{"draft-07 $anchor", `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {
			"a": {"$anchor": "x"}, "b": {"$anchor": "x"}}}`},
		{"$dynamicAnchor in two resources of one document", `{"$id": "https://example.com/tree", "$dynamicAnchor": "node", "type": "object",
			"properties": {"children": {"type": "array", "items": {"$dynamicRef": "#node"}}},
			"$defs": {"strict": {"$id": "https://example.com/strict-tree", "$dynamicAnchor": "node", "$ref": "tree", "unevaluatedProperties": false}}}`},
		{"draft-07 fragment $id beside $ref", `{"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {
			"a": {"$id": "#x", "type": "string"}, "b": {"$id": "#x", "$ref": "#/definitions/a"}}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"s.json": tc.doc}
			if _, err := Compile(newLoader(files), "s.json", Options{}); err != nil {
				t.Fatalf("compile: %v", err)
			}
		})
	}
}

// The library resolves a "$dynamicRef" at validation to the first schema,
// other than its static target, of a list in Go map order of every
// subschema under a schema of its scope that declares the name, in any
// resource: with three declarations in one document, in three resources,
// the pick changes from one compile to the next. Compile refuses it
// every time, and a name declared twice in one document and again in
// another (the static target may be the third).
func TestDynamicAnchorAcrossResourcesIsRefusedEveryTime(t *testing.T) {
	const secret = "peerChosenAnchor"
	cases := []struct {
		name  string
		files map[string]string
	}{
		{"three resources of one document", map[string]string{"s.json": `{"$id": "https://example.com/r", "$dynamicAnchor": "peerChosenAnchor",
			"items": {"$dynamicRef": "#peerChosenAnchor"}, "$defs": {
			"a": {"$id": "https://example.com/a", "$dynamicAnchor": "peerChosenAnchor", "type": "string"},
			"b": {"$id": "https://example.com/b", "$dynamicAnchor": "peerChosenAnchor", "type": "number"}}}`}},
		{"twice here, once in another document", map[string]string{
			"s.json": `{"$id": "https://example.com/r", "items": {"$dynamicRef": "https://example.com/o#peerChosenAnchor"}, "$defs": {
				"a": {"$id": "https://example.com/a", "$dynamicAnchor": "peerChosenAnchor", "type": "string"},
				"b": {"$id": "https://example.com/b", "$dynamicAnchor": "peerChosenAnchor", "type": "number"}}}`,
			"o.json": `{"$id": "https://example.com/o", "$dynamicAnchor": "peerChosenAnchor"}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			for range 40 {
				_, err := Compile(newLoader(tc.files), "s.json", Options{})
				noLeak(t, ampErr(t, err, ErrInvalidSchema, 0), secret)
			}
		})
	}
}
