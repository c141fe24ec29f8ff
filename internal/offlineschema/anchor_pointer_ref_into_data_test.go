package offlineschema

import (
	"testing"
)

// compileOutcomes compiles the root "s.json" of files n times and counts
// the outcomes: "refused", or whether value was "accepted" or "rejected".
func compileOutcomes(t *testing.T, files map[string]string, value any, n int) map[string]int {
	t.Helper()
	out := map[string]int{}
	for range n {
		s, err := Compile(newLoader(files), "s.json", Options{})
		switch {
		case err != nil:
			ampErr(t, err, ErrInvalidSchema, 0)
			out["refused"]++
		case s.Validate(value) == nil:
			out["accepted"]++
		default:
			out["rejected"]++
		}
	}
	return out
}

// quickAgrees checks that the quick check of the bundle files refuses
// the root "s.json" exactly when Compile does.
func quickAgrees(t *testing.T, files map[string]string, refused bool) {
	t.Helper()
	q := NewQuickCheck()
	for k, v := range files {
		_, _ = q.Add(k, []byte(v))
	}
	if err := q.Check(newLoader(files), "s.json", Options{}); (err != nil) != refused {
		t.Fatalf("quick check: %v, want refused=%v", err, refused)
	}
}

// sameEveryCompile compiles the root "s.json" of files 40 times and
// checks that it is refused every time, or else that {"p": 5} is accepted
// every time, and that the quick check agrees.
func sameEveryCompile(t *testing.T, files map[string]string, refused bool) {
	t.Helper()
	got := compileOutcomes(t, files, map[string]any{"p": 5.0}, 40)
	if refused && got["refused"] != 40 {
		t.Fatalf("compiled 40 times: %v; want refused every time", got)
	}
	if !refused && got["accepted"] != 40 {
		t.Fatalf("compiled 40 times: %v; want {\"p\": 5} accepted every time", got)
	}
	quickAgrees(t, files, refused)
}

// Attack (review 57): a JSON-pointer "$ref" into a place the library does
// not list as a subschema (an unknown keyword, "$defs" of a draft-07
// document, a member spelled another way than the library spells it)
// makes jsonschema v5.3.1 add that place to the resource's subresources
// (resolveFragment's "non-standard location"), and an "$anchor" there
// then competes in Go map order with the same name where the anchor scan
// looks. Before the fix Compile accepted such a schema, and {"p": 5} was
// accepted on some compiles and rejected on others. Now such a reference
// into a document that declares any anchor or $id is refused, every time;
// one into a document without anchors (nothing to compete) and one naming
// a subschema still compile.
func TestAnchorUnderPointerRefIntoDataIsRefused(t *testing.T) {
	const meta = `{"$id": "https://example.com/meta", "$dynamicAnchor": "meta",
		"$ref": "https://json-schema.org/draft/2020-12/schema",
		"x": {"properties": {"z": {"$anchor": "n", "type": "number"}}},
		"$defs": {"a": {"$anchor": "n", "type": "string"}}}`
	cases := []struct {
		name    string
		files   map[string]string
		refused bool
	}{
		{"pointer into an unknown keyword", map[string]string{"s.json": `{
			"$ref": "#/x",
			"x": {"properties": {"z": {"$anchor": "n", "type": "number"}}},
			"properties": {"p": {"$ref": "#n"}},
			"$defs": {"a": {"$anchor": "n", "type": "string"}}}`}, true},
		{"pointer into another artifact's data", map[string]string{
			"s.json": `{"allOf": [{"$ref": "o.json#/x"}], "properties": {"p": {"$ref": "o.json#n"}}}`,
			"o.json": `{"x": {"properties": {"z": {"$anchor": "n", "type": "number"}}},
				"$defs": {"a": {"$anchor": "n", "type": "string"}}}`}, true},
		{"pointer by $schema into the meta-schema's data", map[string]string{
			"s.json":    `{"$schema": "https://example.com/meta#/x", "properties": {"p": {"$ref": "https://example.com/meta#n"}}}`,
			"meta.json": meta}, true},
		{"pointer percent-encoded", map[string]string{"s.json": `{
			"properties": {"p": {"$ref": "#n"}, "q": {"$ref": "#/%24defs/b"}},
			"$defs": {"a": {"$anchor": "n", "type": "string"}, "b": {"type": "number"}}}`}, true},
		{"pointer with a member name the library percent-encodes", map[string]string{"s.json": `{
			"properties": {"p": {"$ref": "#n"}, "q": {"$ref": "#/$defs/a;b"}},
			"$defs": {"a": {"$anchor": "n", "type": "string"}, "a;b": {"type": "number"}}}`}, true},
		{"pointer to $defs in a draft-07 document", map[string]string{"s.json": `{
			"$schema": "http://json-schema.org/draft-07/schema#",
			"properties": {"p": {"$ref": "#n"}, "q": {"$ref": "#/$defs/b"}},
			"definitions": {"a": {"$id": "#n", "type": "string"}},
			"$defs": {"b": {"properties": {"z": {"$id": "#n", "type": "number"}}}}}`}, true},
		{"pointer to the object of $defs itself", map[string]string{"s.json": `{
			"properties": {"p": {"$ref": "#n"}, "q": {"$ref": "#/$defs"}},
			"$defs": {"a": {"$anchor": "n", "type": "string"}}}`}, true},
		{"pointer into data, no anchor anywhere", map[string]string{"s.json": `{
			"properties": {"p": {"$ref": "#/x"}}, "x": {"type": "number"}}`}, false},
		{"pointer percent-encoded, no anchor anywhere", map[string]string{"s.json": `{
			"properties": {"p": {"$ref": "#/$defs/a%2Fb"}}, "$defs": {"a/b": {"type": "number"}}}`}, false},
		{"pointer to a subschema, anchors elsewhere", map[string]string{"s.json": `{
			"properties": {"p": {"$ref": "#/$defs/a"}, "q": {"$ref": "#n"}},
			"$defs": {"a": {"$anchor": "n", "type": "number"}, "m/b": {"$ref": "#/$defs/m~1b"}}}`}, false},
		{"pointer to a subschema of an embedded resource", map[string]string{"s.json": `{
			"properties": {"p": {"$ref": "https://example.com/e#/$defs/b"}, "q": {"$ref": "#n"}},
			"$defs": {"a": {"$anchor": "n", "type": "number"},
				"e": {"$id": "https://example.com/e", "$defs": {"b": {"type": "number"}}}}}`}, false},
		{"draft-07 pointer to definitions", map[string]string{"s.json": `{
			"$schema": "http://json-schema.org/draft-07/schema#",
			"properties": {"p": {"$ref": "#/definitions/a"}},
			"definitions": {"a": {"$id": "#n", "type": "number"}}}`}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sameEveryCompile(t, tc.files, tc.refused)
		})
	}
}
