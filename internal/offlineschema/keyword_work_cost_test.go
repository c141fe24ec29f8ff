package offlineschema

import (
	"fmt"
	"strings"
	"testing"
)

// jsonList returns prefix, n items written by item joined with commas,
// and suffix.
func jsonList(prefix string, n int, item func(i int) string, suffix string) string {
	var b strings.Builder
	b.WriteString(prefix)
	for i := range n {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(item(i))
	}
	b.WriteString(suffix)
	return b.String()
}

// repeated returns an array of n copies of v.
func repeated(n int, v func() any) []any {
	out := make([]any, n)
	for i := range out {
		out[i] = v()
	}
	return out
}

// TestKeywordWorkPerEvaluationIsCharged: the cost bound charged one
// evaluation for a schema's own keywords (1 more per 16 "enum" members)
// whatever their size, but the library walks every "required" name (and
// every "dependentRequired" name of a member present) and quotes each
// missing one into its error, looks up every "properties" member in each
// object, compares the value with each "enum" member as deep as the
// member goes (numbers as math/big rationals built from both texts) and
// formats a failing scalar "const" into its error. Measured on a loaded
// 2-core machine, each within every compile limit and charged a few
// hundred evaluations of the 4 million budget: 100 empty objects against
// a 300,000-name "required" took 5 minutes, against a 300,000-name
// "dependentRequired" list 2 minutes; 20 empty strings against a 600,000
// character "const" 4 s; 20 arrays of 100 zeros against 2,000 such
// arrays in an "enum" 6 s; 10,000 floats near 1e-300 against an "enum"
// of 15 small integers 3 s; 1,000 empty objects against 9,000
// "properties" 0.1 s. Expected: the bound charges that work before the
// library runs, so each is refused validation_too_costly (checked
// without running the library), and ordinary uses still validate.
func TestKeywordWorkPerEvaluationIsCharged(t *testing.T) {
	names := func(n int) string { return jsonList("", n, func(i int) string { return fmt.Sprintf(`"%x"`, i) }, "") }
	emptyObject := func() any { return map[string]any{} }
	zeros := func() any { return repeated(100, func() any { return int64(0) }) }
	for _, tc := range []struct {
		name   string
		schema string
		value  any
	}{
		{"required", `{"items": {"required": [` + names(100000) + `]}}`, repeated(100, emptyObject)},
		{"dependentRequired", `{"items": {"dependentRequired": {"a": [` + names(100000) + `]}}}`,
			repeated(100, func() any { return map[string]any{"a": int64(1)} })},
		{"dependencies", `{"$schema": "http://json-schema.org/draft-07/schema#", "items": {"dependencies": {"a": [` + names(100000) + `]}}}`,
			repeated(100, func() any { return map[string]any{"a": int64(1)} })},
		{"properties", jsonList(`{"items": {"properties": {`, 3000, func(i int) string { return fmt.Sprintf(`"%x": {}`, i) }, `}}}`),
			repeated(100000, emptyObject)},
		{"const string", `{"items": {"const": "` + strings.Repeat("a", 1000000) + `"}}`, repeated(1000, func() any { return "" })},
		{"enum of arrays", jsonList(`{"items": {"enum": [`, 2000, func(i int) string { return "[" + strings.Repeat("0,", 99) + fmt.Sprint(i+1) + "]" }, `]}}`),
			repeated(100, zeros)},
		{"enum of numbers against tiny floats", `{"items": {"enum": [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]}}`,
			repeated(100000, func() any { return 1.2345678901234567e-300 })},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, runs := compileCounting(t, tc.schema)
			ampErr(t, s.checkCost(tc.value), ErrValidationTooCostly, 1001)
			if *runs != 0 {
				t.Fatal("the library ran")
			}
		})
	}
	// Ordinary keywords stay far within the budget.
	for _, tc := range []struct {
		name   string
		schema string
		value  any
	}{
		{"required", `{"items": {"required": [` + names(20) + `]}}`, repeated(10000, emptyObject)},
		{"enum of codes", jsonList(`{"items": {"enum": [`, 500, func(i int) string { return fmt.Sprintf(`"c%03d"`, i) }, `]}}`),
			repeated(10000, func() any { return "c499" })},
		{"enum of numbers", `{"items": {"enum": [1, 2, 3, 2.5, 1e10]}}`, repeated(10000, func() any { return 2.5 })},
		{"const object", `{"items": {"const": {"a": [1, 2, 3], "b": "x"}}}`,
			repeated(10000, func() any { return map[string]any{"a": []any{int64(1), int64(2), int64(3)}, "b": "x"} })},
	} {
		t.Run("ordinary "+tc.name, func(t *testing.T) {
			s, _ := compileCounting(t, tc.schema)
			if err := s.checkCost(tc.value); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
}
