package offlineschema

import (
	"encoding/json"
	"fmt"
	"testing"
)

// everyMeasure makes costLevels compute every measure's table, as it
// did before countsIn.
func everyMeasure([]costNode, int) bool { return true }

// TestCostPassNoKeywordCountsInIsSkippedWithTheSameVerdict: the cost
// analysis of every compiled schema computed six tables, each a pass of
// MaxDepth + 1 levels over every node and kind of instance, and the
// table of the numeric keywords (SCHEMA-9), of "enum"/"const"
// comparisons (SCHEMA-8) or of "uniqueItems" was computed, and weighed
// at each Validate where a same-node cycle made it costInf, for schemas
// that have none of those keywords. Such a table no node counts in is
// now skipped: the passes run are counted (costTable.passes, 6 before),
// and every value of the table below gets the same verdict from the
// table compiled as from one with every pass computed (everyMeasure),
// including a schema whose skipped tables hold costInf (a recursive
// reference the analysis takes for a loop at one node).
func TestCostPassNoKeywordCountsInIsSkippedWithTheSameVerdict(t *testing.T) {
	const n = 200000
	tiny := func() any { return 1.2345678901234567e-300 }
	values := []struct {
		name  string
		value any
	}{
		{"a tiny float", 1.2345678901234567e-300},
		{"a small integer", int64(3)},
		{"a number of 100 digits", json.Number("1." + fmt.Sprintf("%098d", 7) + "e-390")},
		{"a string", "secret-value"},
		{"200,000 tiny floats", repeated(n, tiny)},
		{"200,000 small integers", repeated(n, func() any { return int64(3) })},
		{"200,000 strings", repeated(n, func() any { return "abcdefgh" })},
		{"tiny floats in an object", map[string]any{"a": []any{1e-300, map[string]any{"b": 1e-300, "n": 2.5}}, "n": 1e-300, "s": "x"}},
		{"a tiny float 40 deep", nestA(40, 1e-300)},
		{"arrays 40 deep", nestArray(40)},
	}
	const recursive = `{"$schema":"https://json-schema.org/draft/2019-09/schema","$recursiveAnchor":true,`
	for _, tc := range []struct {
		name, schema string
		passes       int  // with countsIn: evaluations, text and regex, and unique, compare, numeric where they count
		infNumeric   bool // the skipped numeric table holds costInf
	}{
		{"an object of strings", `{"type":"object","properties":{"a":{"type":"string"}}}`, 3, false},
		{"numbers without a numeric keyword", `{"$defs":{"n":{"type":"number"}},"items":{"$ref":"#/$defs/n"},"properties":{"n":{"$ref":"#/$defs/n"}}}`, 3, false},
		{"a pattern and a length", `{"type":"string","pattern":"^a+$","maxLength":10}`, 3, false},
		{"integers", `{"type":"array","items":{"type":"integer"}}`, 4, false},
		{"multipleOf in items", `{"items":{"multipleOf":0.5}}`, 4, false},
		{"bounds and an enum of numbers", `{"properties":{"n":{"minimum":0,"exclusiveMaximum":1e300},"a":{"items":{"enum":[1,2,3]}}}}`, 5, false},
		{"an enum of strings", `{"items":{"enum":["a","b"]}}`, 4, false},
		{"a const", `{"properties":{"n":{"const":1e-300}}}`, 4, false},
		{"uniqueItems", `{"uniqueItems":true,"items":{"type":"number"}}`, 4, false},
		{"format regex", `{"items":{"format":"regex"}}`, 3, false},
		{"a recursive reference that may loop at one node", recursive + `"properties":{"x":{"$ref":"#/$defs/b"}},"$defs":{"b":{"$recursiveAnchor":true,"anyOf":[{"$recursiveRef":"#"},{"type":"number"}]}}}`, 3, true},
		{"a recursive tree", recursive + `"type":"object","properties":{"n":{"type":"number"},"c":{"type":"array","items":{"$recursiveRef":"#"}}}}`, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, runs := compileCounting(t, tc.schema)
			nodes := costGraph(s.compiled, nil, false)
			if got := *costLevels(nodes, countsIn); got != *s.cost {
				t.Fatal("the test's graph is not the one Compile analyzed")
			}
			full := costLevels(nodes, everyMeasure)
			if s.cost.passes != tc.passes || full.passes != 6 {
				t.Errorf("passes run: %d, every measure %d; want %d and 6", s.cost.passes, full.passes, tc.passes)
			}
			if full.perDepth != s.cost.perDepth || full.weight != s.cost.weight {
				t.Error("the evaluations' table changed")
			}
			if full.hasNumeric != (s.cost.hasNumeric || tc.infNumeric) {
				t.Errorf("numeric table: every measure %v, compiled %v; want it skipped and costInf: %v", full.hasNumeric, s.cost.hasNumeric, tc.infNumeric)
			}
			compiled := s.cost
			for _, v := range values {
				s.cost = compiled
				got := s.checkCost(v.value)
				s.cost = full
				want := s.checkCost(v.value)
				if fmt.Sprint(got) != fmt.Sprint(want) {
					t.Errorf("%s: verdict %v; with every pass %v", v.name, got, want)
				}
			}
			s.cost = compiled
			if *runs != 0 {
				t.Fatal("the library ran")
			}
		})
	}
}
