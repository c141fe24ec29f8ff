package capability

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// numberDescriptorJSON is a descriptor's JSON form whose extra member
// "x-n" is the number NUMBER.
const numberDescriptorJSON = `{"id": "org.example.numbers:1.0.0", "name": "org.example.numbers", "version": "1.0.0",
  "input_schema": {"uri": "https://registry.example/in.json", "hash_alg": "sha-256", "hash": "HASH"},
  "output_schema": {"uri": "https://registry.example/out.json", "hash_alg": "sha-256", "hash": "HASH"},
  "x-n": NUMBER}`

// aboveMidpoint901 writes, in 901 digits before an exponent, a number
// just above the midpoint of x and the next double up: its double is that
// next double, and strconv's decimal fallback (which keeps 800 digits and
// puts the point after the 800th) read such a number 10^101 too small.
func aboveMidpoint901(x float64) string {
	a := new(big.Float).SetPrec(200).SetFloat64(x)
	b := new(big.Float).SetPrec(200).SetFloat64(math.Nextafter(x, math.Inf(1)))
	m := new(big.Float).SetPrec(200).Add(a, b)
	m.SetMantExp(m, -1)
	mant, exp, _ := strings.Cut(m.Text('e', 799), "e")
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	e, _ := strconv.Atoi(exp)
	digits += strings.Repeat("0", 900-len(digits)) + "1" // 901 digits: 0.D × 10^(e+1)
	return digits + "e" + strconv.Itoa(e+1-901)
}

// TestDescriptorNumberOfMoreThan800LeadingDigitsTakesItsOwnDouble: a
// descriptor's JSON form (a publisher's capability.json, read by
// bundlebuild/source.go; a descriptor read back by Descriptor.UnmarshalJSON)
// had its numbers rounded by strconv.ParseFloat, which reads one of more
// than 800 digits before its point 10^k too small when its decimal
// fallback decides (docs/SPEC-DECISIONS.md AGH-21): 10^400, written so,
// was kept as 1e+299 where 1e400 is refused, and a number near 1e200 was
// signed into the bundle as about 1e99 (threat: a descriptor whose
// number is beyond the doubles accepted, or kept as another number; JSON-6).
func TestDescriptorNumberOfMoreThan800LeadingDigitsTakesItsOwnDouble(t *testing.T) {
	hash := strings.Repeat("ab", 32)
	for _, c := range []struct {
		name, number string
		refused      bool
	}{
		{"1e400 written short", "1e400", true},
		{"10^400 in 901 digits", "1" + strings.Repeat("0", 900) + "e-500", true},
		{"10^300 in 901 digits", "1" + strings.Repeat("0", 900) + "e-600", false},
		{"above a midpoint near 1e200", aboveMidpoint901(1e200), false},
		{"above a midpoint near 1e-200", aboveMidpoint901(1e-200), false},
		{"above a midpoint near 1e-323", aboveMidpoint901(1e-323), false},
		{"a subnormal", "5e-324", false},
		{"a plain number", "1.5", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			doc := strings.ReplaceAll(strings.Replace(numberDescriptorJSON, "NUMBER", c.number, 1), "HASH", hash)
			d, err := DecodeDescriptorJSON([]byte(doc))
			if c.refused {
				var e *amp.Error
				if !errors.As(err, &e) || e.Code != amp.CodeBadRequest || e.Name != ErrInvalidField {
					t.Fatalf("%.20s...: %v, want 4001 %s", c.number, err, ErrInvalidField)
				}
				return
			}
			if err != nil {
				t.Fatalf("%.20s...: %v", c.number, err)
			}
			var got float64
			if err := amp.Unmarshal(d.Extra["x-n"], &got); err != nil {
				t.Fatal(err)
			}
			r, ok := new(big.Rat).SetString(c.number)
			if !ok {
				t.Fatalf("%.20s...: not a number", c.number)
			}
			if want, _ := r.Float64(); math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("%.20s...: kept as %v, want %v", c.number, got, want)
			}
		})
	}
}
