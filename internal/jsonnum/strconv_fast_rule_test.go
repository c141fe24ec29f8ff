package jsonnum

import (
	"math"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
)

// TestOrdinaryNumberFarFromOneIsVouchedForStrconv: attack (over-charge):
// StrconvFast vouched only for numbers of at most 19 digits within
// 10^±30, so an ordinary number beyond that window, which strconv's
// Eisel-Lemire path rounds in 25 to 80 ns (1e100, a shortest double near
// 1e-300, 20 digits near 1e300 whose first 19 decide the double), was
// taken for one strconv rounds slowly: mcpbridge/bodybudget.go charged
// each SlowNumberValues (256) values of a request's envelope, so a
// host's ping whose _meta held 16 of them was refused 413
// too_many_json_values; internal/schemagraph sent a schema holding one
// down its text path and bundlebuild charged its numbers as text
// (JSON-8); and client's own copy of the rule (JSON-9) refused a result
// of 65 such 20-digit numbers; and ParseFloat rounded each with math/big
// (1e-99: 215 ns against 35 ns). Each is now vouched for, ParseFloat
// hands to strconv those its decimal place vouches for, its double is
// the nearest (big.Rat), and the check allocates nothing
// (docs/SPEC-DECISIONS.md JSON-12).
func TestOrdinaryNumberFarFromOneIsVouchedForStrconv(t *testing.T) {
	for _, c := range []struct {
		s       string
		strconv int // 1: ParseFloat hands it to strconv; 0: rounds it itself, in one rounding where telling takes two
	}{
		{"1e100", 1}, {"-1e-100", 1}, {"1e300", 1}, {"1E+300", 1}, {"1.2345678901234567e-300", 1},
		{"123456789e-200", 1}, {"0.000000000000000000000000000000001", 1}, {"-4.9e-307", 1},
		{"1" + strings.Repeat("0", 700) + "e-400", 1}, // 1e300 in 701 digits
		{"1e-307", 1}, {"3e-308", 0}, {"1.7976931348623157e308", 0}, {"2.2250738585072014e-308", 0},
		{"1.0000000000000001110e+300", 1},    // 19 digits and a 0
		{"1.0000000000000001111e+300", 0},    // 20 digits; the first 19 decide
		{"1.2345678901234567891234e-250", 0}, // 23 digits
		{"123456789012345678901234567890e100", 0},
		{"1." + strings.Repeat("0", 700) + "1e200", 0},
	} {
		t.Run(c.s[:min(len(c.s), 40)], func(t *testing.T) {
			if !StrconvFast(c.s) {
				t.Fatalf("not vouched for")
			}
			var got float64
			var err error
			if n := countStrconv(t, func(parse func(string) (float64, error)) { got, err = parse(c.s) }); n != c.strconv {
				t.Errorf("handed to strconv %d times, want %d", n, c.strconv)
			}
			want, _ := nearest(t, c.s)
			if err != nil || math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("got %v %v, want %v", got, err, want)
			}
		})
	}
	long := "1.2345678901234567891234e-250"
	if a := testing.AllocsPerRun(100, func() { StrconvFast(long) }); a != 0 {
		t.Errorf("StrconvFast of a 23-digit number: %v allocations", a)
	}
}

// TestNumberStrconvRoundsSlowlyIsStillNotVouchedFor (guard of the rule's
// other side): each number whose rounding strconv takes its decimal
// fallback for, 10 to 30 µs far from 10^0 (AGH-20), stays outside
// StrconvFast and never reaches strconv through ParseFloat: subnormals
// and a zero they underflow to, 1e309 and a value just over the largest
// double (the fallback starts at 10^310), the midpoint of two doubles
// near 1e300 cut to 20 digits (the seed of mcpbridge's tests), and a
// number just under 2^-1022 whose double is 2^-1022 but whose 53-bit
// rounding, Eisel-Lemire's, is not normal.
func TestNumberStrconvRoundsSlowlyIsStillNotVouchedFor(t *testing.T) {
	under := new(big.Rat).SetFrac(new(big.Int).Sub(new(big.Int).Lsh(big.NewInt(1), 55), big.NewInt(3)),
		new(big.Int).Lsh(big.NewInt(1), 1077)).FloatString(400) // 2^-1022 - 1.5·2^-1076
	for _, s := range []string{
		"5e-324", "1e-320", "2.2250738585072011e-308", "1e-330", "1e-325", "1e309", "1.7976931348623159e308",
		"1.0000000000000001269e+300", "-1.00000000000000012689e+300",
		under,
		"1" + strings.Repeat("0", 800) + "e-700", // over 800 bytes
	} {
		t.Run(s[:min(len(s), 40)], func(t *testing.T) {
			if StrconvFast(s) {
				t.Fatalf("vouched for")
			}
			if n := countStrconv(t, func(parse func(string) (float64, error)) { agreeVia(t, s, parse) }); n != 0 {
				t.Errorf("handed to strconv")
			}
		})
	}
	if f, _ := ParseFloat(under); f != 0x1p-1022 {
		t.Fatalf("the premise: %s rounds to %v, want 2^-1022", under, f)
	}
}

// strconvModel tells, from its own reading of s and big.Float's 53-bit
// rounding (no lower bound on the exponent), whether strconv's fast
// paths decide s (Go's https://go.dev/src/internal/strconv/atof.go atof64 and
// https://go.dev/src/internal/strconv/atofeisel.go eiselLemire64): m the first 19 digits
// (leading zeros left out) and q the exponent of m × 10^q; decided when
// that rounds to a normal double and, for a text with a nonzero digit
// after them, (m+1) × 10^q to the same; a number of more than 19 digits
// within 10^±30 (its point) is cheap either way; one over 800 bytes is
// not.
func strconvModel(s string) bool {
	if len(s) > 800 {
		return false
	}
	mant, exp, _ := strings.Cut(strings.ToLower(strings.TrimPrefix(s, "-")), "e")
	intPart, frac, _ := strings.Cut(mant, ".")
	all := strings.TrimLeft(intPart+frac, "0")
	if strings.Trim(all, "0") == "" {
		return true
	}
	e, _ := strconv.Atoi(exp)
	point := len(all) - len(frac) + e // 0.all × 10^point
	sig := strings.TrimRight(all, "0")
	head := all[:min(19, len(all))]
	m, _ := strconv.ParseUint(head, 10, 64)
	q := point - len(head)
	round := func(m uint64) (*big.Float, bool) {
		r := new(big.Rat).SetUint64(m)
		p := new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(max(q, -q))), nil))
		if q < 0 {
			r.Quo(r, p)
		} else {
			r.Mul(r, p)
		}
		f := new(big.Float).SetPrec(53).SetMode(big.ToNearestEven).SetRat(r)
		return f, f.MantExp(nil) >= -1021 && f.MantExp(nil) <= 1024
	}
	lo, normal := round(m)
	switch {
	case !normal:
		return false
	case len(sig) <= 19 || -30 <= point && point <= 30:
		return true
	}
	hi, normal := round(m + 1)
	return normal && lo.Cmp(hi) == 0
}

// TestStrconvFastIsTheModelOfStrconvsFastPaths: StrconvFast, which
// rounds with internal/jsonnum's converter, agrees with strconvModel,
// which rounds with big.Float, on texts about every place a rule could
// slip: shortest doubles over the whole range and about its ends,
// midpoints of two doubles cut to 19 to 25 digits (just below and just
// above them), random long mantissas at every decimal place from 10^-340
// to 10^320, and both ends of the 10^±30 window (docs/SPEC-DECISIONS.md
// JSON-12).
func TestStrconvFastIsTheModelOfStrconvsFastPaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(12, 13))
	var texts []string
	for range 3000 {
		x := math.Float64frombits(rng.Uint64() &^ (1 << 63))
		if math.IsInf(x, 0) || math.IsNaN(x) {
			continue
		}
		texts = append(texts, strconv.FormatFloat(x, 'e', -1, 64))
		digits, point := midpointDigits(x)
		k := 19 + rng.IntN(7)
		cut := digits[:min(k, len(digits))]
		texts = append(texts, spellings(cut, point)...)
		if last := cut[len(cut)-1]; len(cut) < len(digits) && last < '9' {
			texts = append(texts, spellings(cut[:len(cut)-1]+string(last+1), point)...)
		}
	}
	for _, end := range []float64{0x1p-1022, 1e-308, 1e-307, math.MaxFloat64, 1e308, 1e30, 1e-30, 1e31, 1e-31} {
		f := end
		for range 100 {
			texts = append(texts, strconv.FormatFloat(f, 'e', -1, 64), strconv.FormatFloat(f, 'e', 21, 64))
			f = math.Nextafter(f, 0)
		}
	}
	for p := -340; p <= 320; p++ {
		var b strings.Builder
		b.WriteString("0.")
		for range 20 + rng.IntN(10) {
			b.WriteByte(byte('1' + rng.IntN(9)))
		}
		texts = append(texts, b.String()+"e"+strconv.Itoa(p))
	}
	wrong := 0
	for _, s := range texts {
		if got, want := StrconvFast(s), strconvModel(s); got != want {
			if wrong++; wrong <= 5 {
				t.Errorf("%s: StrconvFast %v, model %v", s, got, want)
			}
		}
	}
	if wrong > 0 {
		t.Fatalf("%d of %d texts misjudged", wrong, len(texts))
	}
}

// BenchmarkStrconvOnNumbers measures what strconv.ParseFloat costs for
// numbers on either side of StrconvFast, and what the rule costs itself
// where it rounds to tell (JSON-12): those it vouches for should cost
// tens of nanoseconds, the others microseconds.
func BenchmarkStrconvOnNumbers(b *testing.B) {
	for _, c := range []struct{ name, s string }{
		{"fast/1e100", "1e100"},
		{"fast/shortest-near-1e-300", "1.2345678901234567e-300"},
		{"fast/20-digits-decided-near-1e300", "1.0000000000000001111e+300"},
		{"fast/23-digits-decided-near-1e-250", "1.2345678901234567891234e-250"},
		{"slow/subnormal", "5e-324"},
		{"slow/20-digit-midpoint-near-1e300", "1.0000000000000001269e+300"},
		{"slow/1e309", "1e309"},
	} {
		b.Run("strconv/"+c.name, func(b *testing.B) {
			for b.Loop() {
				strconv.ParseFloat(c.s, 64)
			}
		})
		b.Run("rule/"+c.name, func(b *testing.B) {
			for b.Loop() {
				StrconvFast(c.s)
			}
		})
	}
}
