package offlineschema

import (
	"fmt"
	"strings"
	"testing"
)

// anyOfBranches returns a schema whose array items meet n "anyOf"
// branches, each the schema text branch.
func anyOfBranches(n int, branch string) string {
	return `{"items": {"anyOf": [` + strings.TrimSuffix(strings.Repeat(branch+",", n), ",") + `]}}`
}

// TestNumericKeywordsOnNumbersOfLargeExponentAreCharged: the cost bound
// charged one evaluation for a schema's "type": "integer", "minimum",
// "exclusiveMinimum", "maximum", "exclusiveMaximum" and "multipleOf",
// but the library builds a math/big rational from the instance's text
// for each of them and compares or divides it by the keyword's own
// rational: 0.5 µs for 1.5 against "multipleOf": 0.5, 6 µs for a float
// near 1e-300 against a "multipleOf" near 1e-400, 3 µs for 3 against
// it. Measured on a loaded 2-core machine, 262,143 floats near 1e-300
// (a 2.4 MB CBOR message) against 15 "anyOf" branches of "multipleOf",
// "minimum" and "maximum" near 1e-400 took 99 s within the budget.
// Expected: those conversions are charged before the library runs, so
// each value below is refused validation_too_costly without running
// the library, and the same schemas with ordinary numbers, and ordinary
// numbers against them, still pass the bound.
func TestNumericKeywordsOnNumbersOfLargeExponentAreCharged(t *testing.T) {
	const n = 200000 // 16 evaluations an item before: 3.2 million, within the budget
	long := "1." + strings.Repeat("2345678901", 9) + "e-400"
	tiny := func() any { return 1.2345678901234567e-300 }
	three := func() any { return int64(3) }
	for _, tc := range []struct {
		name, branch string
		value        func() any
	}{
		{"multipleOf near 1e-400, floats near 1e-300", `{"multipleOf": ` + long + `}`, tiny},
		{"minimum near 1e-400, floats near 1e-300", `{"minimum": ` + long + `}`, tiny},
		{"exclusiveMaximum 1e-400, floats near 1e-300", `{"exclusiveMaximum": 1e-400}`, tiny},
		{"type integer, floats near 1e-300", `{"type": "integer"}`, tiny},
		{"multipleOf near 1e-400, small integers", `{"multipleOf": ` + long + `}`, three},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, runs := compileCounting(t, anyOfBranches(15, tc.branch))
			ampErr(t, s.checkCost(repeated(n, tc.value)), ErrValidationTooCostly, 1001)
			if *runs != 0 {
				t.Fatal("the library ran")
			}
		})
	}
	for _, tc := range []struct {
		name, branch string
		value        any
	}{
		{"multipleOf 0.5", `{"multipleOf": 0.5}`, 1.5},
		{"type integer and bounds", `{"type": "integer", "minimum": -1e9, "maximum": 18446744073709551615}`, int64(3)},
		{"exclusive bounds", `{"exclusiveMinimum": 0.001, "exclusiveMaximum": 1e10}`, 2.5e-3},
		{"multipleOf 1e-9 and a float", `{"multipleOf": 1e-9}`, 0.125},
	} {
		t.Run("ordinary "+tc.name, func(t *testing.T) {
			s, _ := compileCounting(t, anyOfBranches(15, tc.branch))
			if err := s.checkCost(repeated(n, func() any { return tc.value })); err != nil {
				t.Fatalf("refused: %v", err)
			}
		})
	}
	// Both sides count: the number's size and the keyword's.
	if got := ratOf(t, "0.5"); got != 1 {
		t.Errorf("ratSize(0.5) = %d, want 1", got)
	}
	if got := ratOf(t, "1e-400"); got < 12 {
		t.Errorf("ratSize(1e-400) = %d, want at least 12", got)
	}
}

func ratOf(t *testing.T, num string) uint64 {
	t.Helper()
	s, _ := compileCounting(t, fmt.Sprintf(`{"multipleOf": %s}`, num))
	return ratSize(s.compiled.MultipleOf)
}
