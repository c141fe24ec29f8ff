package offlineschema

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestUniqueItemsSmallArraysNumberComparisons: for arrays of at most 20
// items jsonschema v5.3.1's uniqueItems compares every pair with equals,
// and equals turns both numbers into math/big rationals from their text
// (fmt.Sprint, big.Rat.SetString: for a float64 near 1e-300, a 1,000-bit
// power of ten and a gcd) at every comparison. checkCost charged such an
// array items × size, a number counting as one node, like a boolean; one
// number comparison really costs 4 to 5 µs, against the 0.1 to 1.3 µs of
// an evaluation the budget is sized by. A peer's CBOR array of 3,000
// arrays of 20 distinct tiny floats (63,000 items, about 550 KB) against
// {"items":{"uniqueItems":true}} was charged about 1.3 million of the 4
// million evaluations of MaxValidationCost and took about 6 s of CPU. A
// number's size now grows with its digits and decimal exponent
// (numberSize): the value is refused (validation_too_costly) before the
// library runs.
func TestUniqueItemsSmallArraysNumberComparisons(t *testing.T) {
	const name = "TestUniqueItemsSmallArraysNumberComparisons"
	if os.Getenv(victimChild) == name {
		outer := make([]any, 3000)
		for i := range outer {
			inner := make([]any, 20)
			for j := range inner {
				inner[j] = 1.2345678901234567e-300 * float64(j+1+i%3)
			}
			outer[i] = inner
		}
		// What a peer sends: the value through CBOR, as the agent reads it.
		item, err := ToCBOR(outer)
		if err != nil {
			fmt.Println("FAIL: ToCBOR:", err)
			os.Exit(1)
		}
		v, err := ValueFromCBOR(item)
		if err != nil {
			fmt.Println("value refused:", amp.SafeMessage(err))
			return
		}
		if _, ok := v.([]any)[0].([]any)[0].(float64); !ok || math.IsInf(v.([]any)[0].([]any)[0].(float64), 0) {
			fmt.Println("FAIL: not a float64")
			os.Exit(1)
		}
		sch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"array","items":{"type":"array","uniqueItems":true}}`}), "in.schema.json", Options{})
		if err != nil {
			fmt.Println("FAIL: compile:", err)
			os.Exit(1)
		}
		start := time.Now()
		err = sch.Validate(v)
		fmt.Println("validate:", len(item), "bytes,", time.Since(start), err)
		return
	}
	out, timedOut := runVictimChild(t, name, 3*time.Second)
	if timedOut {
		t.Fatalf("validating 3,000 arrays of 20 distinct floats against {\"uniqueItems\":true} ran past %v (killed): number comparisons charged as one node\nchild output:\n%s", victimLimit(3*time.Second), out)
	}
	if !strings.Contains(out, string(ErrValidationTooCostly)) {
		t.Fatalf("3,000 arrays of 20 tiny floats must be refused as too costly\nchild output:\n%s", out)
	}
}

// TestUniqueItemsOrdinaryNumbersStillValidate: ordinary numbers (small
// exponents, integers) still count about one node, so arrays of them
// that must be unique validate as before.
func TestUniqueItemsOrdinaryNumbersStillValidate(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want uint64
	}{
		{int64(42), 1}, {uint64(math.MaxUint64), 1}, {3.25, 1}, {1e-300, 10}, {math.MaxFloat64, 11},
		{json.Number("-18446744073709551616"), 1}, {json.Number("1e400"), 13},
	} {
		if got := numberSize(tc.v); got != tc.want {
			t.Errorf("numberSize(%v) = %d, want %d", tc.v, got, tc.want)
		}
	}
	sch, err := Compile(newLoader(map[string]string{"in.schema.json": `{"type":"array","items":{"type":"array","uniqueItems":true}}`}), "in.schema.json", Options{})
	if err != nil {
		t.Fatal(err)
	}
	outer := make([]any, 3000)
	for i := range outer {
		inner := make([]any, 20)
		for j := range inner {
			inner[j] = float64(i*20+j) + 0.5
		}
		outer[i] = inner
	}
	if err := sch.Validate(outer); err != nil {
		t.Fatalf("3,000 arrays of 20 ordinary distinct numbers: %v", err)
	}
}
