package offlineschema

import (
	"testing"
)

// Attack: in a draft-07 document jsonschema v5.3.1 compiles
// "contentSchema" (beside "contentMediaType") although its draft-07 table
// of subschemas does not list it, so compiling it adds that place as a
// "non-standard location", and the "$id" fragments (draft-07 anchors)
// under it join the resource's anchors, where "#n" then picks one of two
// in Go map order. The anchor scan, walking only the listed places, saw
// none of them, and the quick check vouched for the document (it did not
// look inside "contentSchema" either), even for a "contentSchema" that is
// no schema at all, which Compile refuses. Now the scan walks a draft-07
// "contentSchema" beside "contentMediaType", and the quick check leaves a
// draft-07 "contentSchema" to Compile.
func TestDraft7ContentSchemaAnchorsAreCounted(t *testing.T) {
	cases := []struct {
		name    string
		doc     string
		refused bool
	}{
		{"two anchors under contentSchema", `{"$schema": "http://json-schema.org/draft-07/schema#",
			"properties": {"p": {"type": "number"}},
			"contentMediaType": "application/json",
			"contentSchema": {"allOf": [{"$ref": "#n"}], "definitions": {
				"a": {"$id": "#n", "type": "string"}, "b": {"$id": "#n", "type": "number"}}}}`, true},
		{"contentSchema that is no schema", `{"$schema": "http://json-schema.org/draft-07/schema#",
			"properties": {"p": {"type": "number"}},
			"contentMediaType": "application/json", "contentSchema": 5}`, true},
		{"one anchor under contentSchema", `{"$schema": "http://json-schema.org/draft-07/schema#",
			"properties": {"p": {"type": "number"}},
			"contentMediaType": "application/json",
			"contentSchema": {"allOf": [{"$ref": "#n"}], "definitions": {"a": {"$id": "#n", "type": "string"}}}}`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"s.json": tc.doc}
			// Any "contentSchema" makes a validation's cost unknown
			// (cost.go): what counts here is whether Compile accepts.
			got := compileOutcomes(t, files, map[string]any{"p": 5.0}, 40)
			if want := map[bool]int{true: 40, false: 0}[tc.refused]; got["refused"] != want {
				t.Fatalf("compiled 40 times: %v; want refused %d times", got, want)
			}
			quickAgrees(t, files, tc.refused)
		})
	}
}
