package offlineschema

import (
	"testing"
)

// Attack: two (or three) schema artifacts of a bundle name each other as
// "$schema". jsonschema v5.3.1 finds a document's draft by loading its
// meta-schema and taking that one's draft, recursively, and a meta-schema
// it has loaded but whose draft it has not found yet sends it around the
// loop again without end: before the fix, Compile (and the quick check,
// which compiles such a schema) died of a Go stack overflow, a fatal
// error no recover catches, taking the importer or the agent with it.
// Now the load that would close the loop is refused: invalid_schema.
func TestMetaSchemaCycleIsRefusedNotACrash(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
	}{
		{"two meta-schemas", map[string]string{
			"m1.json": `{"$id": "https://example.com/m1", "$schema": "https://example.com/m2"}`,
			"m2.json": `{"$id": "https://example.com/m2", "$schema": "https://example.com/m1#"}`,
			"s.json":  `{"$schema": "https://example.com/m1"}`}},
		{"three, by synthetic url", map[string]string{
			"m1.json": `{"$schema": "ampbundle:///m2.json"}`,
			"m2.json": `{"$schema": "ampbundle:///m3.json"}`,
			"m3.json": `{"$schema": "ampbundle:///m1.json"}`,
			"s.json":  `{"$schema": "ampbundle:///m1.json"}`}},
		{"the root in the loop", map[string]string{
			"m1.json": `{"$id": "https://example.com/m1", "$schema": "ampbundle:///s.json"}`,
			"s.json":  `{"$schema": "https://example.com/m1"}`}},
		{"itself, by its $id", map[string]string{
			"s.json": `{"$id": "https://example.com/s", "$schema": "https://example.com/s"}`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile(newLoader(tc.files), "s.json", Options{})
			ampErr(t, err, ErrInvalidSchema, 0)
			quickAgrees(t, tc.files, true)
		})
	}
	// A chain that ends at a built-in draft still compiles.
	files := map[string]string{
		"m1.json": `{"$id": "https://example.com/m1", "$schema": "https://example.com/m2"}`,
		"m2.json": `{"$id": "https://example.com/m2", "$schema": "https://json-schema.org/draft/2020-12/schema"}`,
		"s.json":  `{"$schema": "https://example.com/m1", "type": "object"}`,
	}
	if _, err := Compile(newLoader(files), "s.json", Options{}); err != nil {
		t.Fatalf("a chain of meta-schemas ending at 2020-12: %v", err)
	}
}
