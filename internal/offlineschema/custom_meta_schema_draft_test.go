package offlineschema

import (
	"fmt"
	"testing"
)

// Attack (review 57): the root's "$schema" names a meta-schema of the
// bundle (by its "$id"), itself a 2020-12 document (directly, through
// another meta-schema of the bundle, or a vocabulary meta-schema the
// library serves itself). jsonschema v5.3.1 reads the root with that
// draft, where only "$id" makes a resource and "id" is an unknown keyword.
// The anchor scan read a document whose "$schema" is not a built-in draft
// with every draft's rules at once, taking "id" for a resource boundary
// too: "$defs/b" was a resource of its own there, so the second "$anchor"
// n did not count, while for the library it does and "#n" reached the
// string or the number schema in map order ({"p": 5} accepted on some
// compiles and rejected on others). Now the scan reads each document with
// the draft the library gives it, following the meta-schema chain; with
// draft-04 at the end of the chain, an "$anchor" is not an anchor.
func TestCustomMetaSchemaDraftDecidesAnchorResources(t *testing.T) {
	const splitByID = `{"$schema": "%s",
		"properties": {"p": {"$ref": "#n"}},
		"$defs": {
			"a": {"$anchor": "n", "type": "string"},
			"b": {"id": "https://example.com/other", "$defs": {"c": {"$anchor": "n", "type": "number"}}}}}`
	meta2020 := `{"$id": "https://example.com/meta", "$schema": "https://json-schema.org/draft/2020-12/schema",
		"$dynamicAnchor": "meta", "$ref": "https://json-schema.org/draft/2020-12/schema"}`
	cases := []struct {
		name    string
		files   map[string]string
		refused bool
	}{
		{"meta-schema of the bundle", map[string]string{
			"meta.json": meta2020,
			"s.json":    fmt.Sprintf(splitByID, "https://example.com/meta")}, true},
		{"two meta-schemas of the bundle", map[string]string{
			"meta.json":  meta2020,
			"meta2.json": `{"$id": "https://example.com/meta2", "$schema": "https://example.com/meta#"}`,
			"s.json":     fmt.Sprintf(splitByID, "https://example.com/meta2")}, true},
		{"vocabulary meta-schema of the library", map[string]string{
			"s.json": fmt.Sprintf(splitByID, "https://json-schema.org/draft/2020-12/meta/core")}, true},
		{"draft-04 meta-schema of the bundle, id fragments", map[string]string{
			"meta4.json": `{"id": "https://example.com/meta4", "$schema": "http://json-schema.org/draft-04/schema#"}`,
			"s.json": `{"$schema": "https://example.com/meta4", "properties": {"p": {"$ref": "#n"}},
				"definitions": {"a": {"id": "#n", "type": "string"}, "b": {"id": "#n", "type": "number"}}}`}, true},
		{"draft-04 meta-schema of the bundle, $anchor is not an anchor", map[string]string{
			"meta4.json": `{"id": "https://example.com/meta4", "$schema": "http://json-schema.org/draft-04/schema#"}`,
			"s.json": `{"$schema": "https://example.com/meta4", "properties": {"p": {"type": "number"}},
				"definitions": {"a": {"$anchor": "n", "type": "string"}, "b": {"$anchor": "n", "type": "number"}}}`}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sameEveryCompile(t, tc.files, tc.refused)
		})
	}
}
