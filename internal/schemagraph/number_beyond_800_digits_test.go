package schemagraph

import (
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"
)

// TestSchemaNumberOfMoreThan800LeadingDigitsTakesItsOwnFloat64: with
// Options.Float64 (how internal/offlineschema reads a publisher's schema
// for SchemaID and the quick check), numbers were rounded by
// strconv.ParseFloat, whose decimal fallback sets the point of a number
// of more than 800 digits before it at the 800th: 10^400 written as 901
// digits and "e-500" was read as 1e+299 and the document kept, though a
// number beyond the doubles refuses it; the midpoint of two doubles near
// 1e200 so written was read as about 1e99 (docs/SPEC-DECISIONS.md
// JSON-4). Both paths now give each number the double nearest its value,
// and refuse the one beyond the doubles (KindNumber).
func TestSchemaNumberOfMoreThan800LeadingDigitsTakesItsOwnFloat64(t *testing.T) {
	above := func(x float64) string { // 901 digits just above the midpoint of x and the next double
		a := new(big.Float).SetPrec(200).SetFloat64(x)
		b := new(big.Float).SetPrec(200).SetFloat64(math.Nextafter(x, math.Inf(1)))
		m := new(big.Float).SetPrec(200).Add(a, b)
		m.SetMantExp(m, -1)
		mant, exp, _ := strings.Cut(m.Text('e', 40), "e")
		e, _ := strconv.Atoi(exp)
		digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
		long := digits + strings.Repeat("0", 900-len(digits)) + "1"
		return long + "e" + strconv.Itoa(e+1-len(long))
	}
	for _, c := range []struct {
		name, number string
		refused      bool
	}{
		{"10^400 in 901 digits", "1" + strings.Repeat("0", 900) + "e-500", true},
		{"above a midpoint near 1e200", above(1e200), false},
		{"above a midpoint near 1e-200", above(1e-200), false},
		{"a subnormal in 901 digits", above(1e-323), false},
	} {
		r, _ := new(big.Rat).SetString(c.number)
		want, _ := r.Float64()
		doc := []byte(`{"const": [` + c.number + `]}`)
		for _, fast := range []bool{false, true} {
			v, err := Parse(doc, Options{MaxDepth: 10000, Float64: true, EncodingJSON: fast})
			if c.refused {
				if KindOf(err) != KindNumber {
					t.Errorf("%s (EncodingJSON %v): %v %v, want KindNumber", c.name, fast, v, err)
				}
				continue
			}
			m, _ := v.(map[string]any)
			arr, _ := m["const"].([]any)
			var got float64
			if len(arr) == 1 {
				got, _ = arr[0].(float64)
			}
			if err != nil || got != want {
				t.Errorf("%s (EncodingJSON %v): got %v %v, want %v", c.name, fast, got, err, want)
			}
		}
	}
}
