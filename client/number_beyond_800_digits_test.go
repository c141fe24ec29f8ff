package client

import (
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// aboveMidpointIn writes, with n digits before an exponent (n > 800), a
// number just above the midpoint of x and the next double up: its double
// is that next double, while strconv's decimal fallback, which keeps 800
// digits and puts the point after the 800th (docs/SPEC-DECISIONS.md
// AGH-21), read it 10^(n-800) too small.
func aboveMidpointIn(x float64, n int) string {
	a := new(big.Float).SetPrec(200).SetFloat64(x)
	b := new(big.Float).SetPrec(200).SetFloat64(math.Nextafter(x, math.Inf(1)))
	m := new(big.Float).SetPrec(200).Add(a, b)
	m.SetMantExp(m, -1)
	mant, exp, _ := strings.Cut(m.Text('e', 799), "e")
	digits := strings.TrimRight(strings.Replace(mant, ".", "", 1), "0")
	e, _ := strconv.Atoi(exp)
	digits += strings.Repeat("0", n-1-len(digits)) + "1"
	return digits + "e" + strconv.Itoa(e+1-n)
}

// exactDouble is the double nearest the number s, from its exact value.
func exactDouble(t *testing.T, s string) float64 {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		t.Fatalf("%.20s...: not a number", s)
	}
	f, _ := r.Float64()
	return f
}

// TestParamsNumberOfMoreThan800LeadingDigitsTakesItsOwnDouble: Call
// encodes a number of its params (a json.Number or json.RawMessage in
// them may carry any text, a host's request forwarded as it came) as the
// double strconv.ParseFloat read, which is 10^k too small for a number of
// more than 800 digits before its point when its decimal fallback decides
// (docs/SPEC-DECISIONS.md AGH-21): 10^400 so written was sent as 1e+299,
// where 1e400 is refused, and a number near 1e200 as about 1e99 (threat:
// the provider is asked with another number than the caller's; JSON-5).
func TestParamsNumberOfMoreThan800LeadingDigitsTakesItsOwnDouble(t *testing.T) {
	for _, c := range []struct {
		name, number string
		refused      bool
	}{
		{"1e400 written short", "1e400", true},
		{"10^400 in 901 digits", "1" + strings.Repeat("0", 900) + "e-500", true},
		{"above a midpoint near 1e200", aboveMidpointIn(1e200, 901), false},
		{"above a midpoint near 1e-200", aboveMidpointIn(1e-200, 901), false},
		{"a subnormal", "5e-324", false},
		{"a plain number", "1.5", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			enc, err := paramsCBOR(map[string]json.RawMessage{"x": json.RawMessage(c.number)})
			if c.refused {
				if !errors.Is(err, &amp.Error{Code: 0, Name: ErrParamsEncoding}) {
					t.Fatalf("%.20s...: %v, want %s", c.number, err, ErrParamsEncoding)
				}
				return
			}
			var got map[string]float64
			if err != nil || amp.Unmarshal(enc, &got) != nil {
				t.Fatalf("%.20s...: %v", c.number, err)
			}
			if want := exactDouble(t, c.number); math.Float64bits(got["x"]) != math.Float64bits(want) {
				t.Fatalf("%.20s...: sent as %v, want %v", c.number, got["x"], want)
			}
		})
	}
}

// TestResultNumberOfMoreThan800LeadingDigitsIsNoInteger: decodeResult
// writes a float of the result whose value is an integer below 2^53 as
// that integer, for an integer field (integralFloats); it read each
// number with json.Number.Float64, strconv's misreading of a number of
// more than 800 digits before its point (docs/SPEC-DECISIONS.md AGH-21):
// a number just above a midpoint near 5e118, written in 903 digits, was
// read 10^103 too small, about 5e15, an integer double, and an int64
// field took it; its double is 5e118, beyond 2^53, which an int64 field
// refuses (threat: a result that does not fit Out decoded into it as
// another number; JSON-5). amp.JSONValue writes no such text today, so
// this holds integralFloats to its own contract, any JSON text.
func TestResultNumberOfMoreThan800LeadingDigitsIsNoInteger(t *testing.T) {
	n := aboveMidpointIn(5e118, 903)
	for _, data := range []string{n, `{"v":` + n + `}`} {
		if out, ok := integralFloats([]byte(data)); ok {
			t.Errorf("integralFloats rewrote %.20s... as %.40s", data, out)
		}
	}
	if v, err := decodeResult[int64]([]byte(n)); !errors.Is(err, ErrResultType) {
		t.Errorf("an int64 took %.20s... as %d (%v), want %s", n, v, err, ErrResultType)
	}
	if v, err := decodeResult[int64]([]byte("5e15")); err != nil || v != 5e15 {
		t.Errorf("an int64 took 5e15 as %d (%v)", v, err)
	}
}
