package jsonnum

import (
	"errors"
	"math"
	"math/big"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// midpointDigits returns the exact decimal digits and exponent of the
// midpoint between x and the next double up: its value is 0.digits ×
// 10^point (at most 768 significant digits, so 800 are exact).
func midpointDigits(x float64) (digits string, point int) {
	a := new(big.Float).SetPrec(200).SetFloat64(x)
	b := new(big.Float).SetPrec(200).SetFloat64(math.Nextafter(x, math.Inf(1)))
	m := new(big.Float).SetPrec(200).Add(a, b)
	m.SetMantExp(m, -1)
	text := m.Text('e', 799) // d.ddd…e±XX
	mant, exp, _ := strings.Cut(text, "e")
	e, _ := strconv.Atoi(exp)
	return strings.TrimRight(strings.Replace(mant, ".", "", 1), "0"), e + 1
}

// spellings writes 0.digits × 10^point in a few JSON forms: d.ddd e±X,
// DDD e-X (an integer mantissa) and, near 1, plain notation.
func spellings(digits string, point int) []string {
	if digits == "" {
		return []string{"0"}
	}
	out := []string{
		digits[:1] + "." + digits[1:] + "e" + strconv.Itoa(point-1),
		digits + "E" + strconv.Itoa(point-len(digits)),
	}
	if len(digits) == 1 && point >= 1 {
		out[0] = digits + "e+" + strconv.Itoa(point-1)
	} else if len(digits) == 1 {
		out[0] = digits + "e" + strconv.Itoa(point-1)
	}
	if point <= 0 && point > -40 {
		out = append(out, "0."+strings.Repeat("0", -point)+digits)
	}
	return out
}

// hostileNumbers are the numbers strconv.ParseFloat rounds slowly: whose
// double is subnormal, and of more than 19 digits near a rounding
// boundary far from 10^0 (the midpoint of two doubles cut at several
// lengths, each cut of more than 19 significant digits: one of at most
// 19, the 17-digit cut or a 20-digit cut ending in 0, strconv's
// Eisel-Lemire path rounds in under 0.2 µs, docs/SPEC-DECISIONS.md
// JSON-12).
func hostileNumbers() []string {
	out := []string{"5e-324", "1e-323", "2.225073858507201e-308", "1.2345678901234e-310", "0.1e-320",
		"4.9406564584124654e-324", "2.4703282292062327e-324", "2.4703282292062328e-324"}
	for _, x := range []float64{1e300, 1e-300, 1e200, 1e-200, 1e100, 1e-100, 2.2250738585072014e-308, 6e-320, math.Nextafter(math.MaxFloat64, 0)} {
		digits, point := midpointDigits(x)
		for _, k := range []int{20, 21, 25, 40, 100, len(digits)} {
			cut := strings.TrimRight(digits[:min(k, len(digits))], "0")
			if len(cut) > 19 || x < 0x1p-1022 {
				out = append(out, spellings(cut, point)...)
			}
		}
	}
	return out
}

// countStrconv counts the numbers that the ParseFloat f is given hands
// to strconv while f runs.
func countStrconv(t *testing.T, f func(parse func(string) (float64, error))) int {
	t.Helper()
	n := 0
	counted := func(s string, bits int) (float64, error) { n++; return strconv.ParseFloat(s, bits) }
	f(func(s string) (float64, error) { return parseFloat(s, counted) })
	return n
}

// TestNumbersThatCostStrconvItsSlowPathNeverReachIt: a subnormal number
// (5e-324) or one of more than 19 digits near a rounding boundary far
// from 10^0 took strconv.ParseFloat's decimal fallback, 10 to 100 µs
// each, a thousand times a plain number: a document of 65,536 of them
// held a reader for seconds (docs/SPEC-DECISIONS.md AGH-20, JSON-3). None
// of them reaches strconv, and each is rounded to the double strconv
// gives; a plain number still does (the fast paths are strconv's).
func TestNumbersThatCostStrconvItsSlowPathNeverReachIt(t *testing.T) {
	nums := hostileNumbers()
	for _, s := range nums {
		want, finite := nearest(t, s)
		if !finite {
			t.Fatalf("%s: not finite", s)
		}
		if StrconvFast(s) {
			t.Errorf("%.40s: StrconvFast", s)
		}
		var got float64
		var err error
		if n := countStrconv(t, func(parse func(string) (float64, error)) { got, err = parse(s) }); n != 0 {
			t.Errorf("%.40s: handed to strconv", s)
		}
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Errorf("%.40s: got %v %v, want %v", s, got, err, want)
		}
	}
	if n := countStrconv(t, func(parse func(string) (float64, error)) { parse("1.5") }); n != 1 || !StrconvFast("1.5") {
		t.Errorf("a plain number reached strconv %d times, want 1", n)
	}
	fast := true
	if a := testing.AllocsPerRun(10, func() { fast = StrconvFast(nums[0]) }); a != 0 || fast {
		t.Errorf("StrconvFast: %v allocations", a)
	}
}

// nearest is the double nearest the number s, ties to even, read from
// its exact value (big.Rat), and false when that is infinite.
// strconv.ParseFloat is no oracle: it misreads some numbers of more than
// 800 digits (AGH-21). A text big.Rat refuses (an exponent of more than
// a million) is read by strconv.
func nearest(t *testing.T, s string) (float64, bool) {
	t.Helper()
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		f, err := strconv.ParseFloat(s, 64)
		return f, err == nil && !math.IsInf(f, 0)
	}
	f, _ := r.Float64()
	if f == 0 && strings.HasPrefix(s, "-") {
		f = math.Copysign(0, -1)
	}
	return f, !math.IsInf(f, 0)
}

// agree checks that ParseFloat gives s the double nearest it, bit for
// bit (the sign of a zero included), and refuses it exactly when that is
// infinite.
func agree(t *testing.T, s string) {
	t.Helper()
	agreeVia(t, s, ParseFloat)
}

// agreeVia is agree with parse standing for ParseFloat.
func agreeVia(t *testing.T, s string, parse func(string) (float64, error)) {
	t.Helper()
	want, finite := nearest(t, s)
	got, err := parse(s)
	if !finite {
		if !errors.Is(err, ErrRange) {
			t.Errorf("%.60s: got %v %v, want ErrRange", s, got, err)
		}
		return
	}
	if err != nil || math.Float64bits(got) != math.Float64bits(want) {
		t.Errorf("%.60s: got %v (%x) %v, want %v (%x)", s, got, math.Float64bits(got), err, want, math.Float64bits(want))
	}
}

// TestExactRoundingAgreesWithStrconv: the rounding that replaces
// strconv's slow path agrees with strconv on the numbers where rounding
// is hardest: the exact midpoints of two doubles (ties to even), the same
// cut short (just below) or followed by more digits past the 800 that
// decide (just above), across the range of doubles, subnormals and the
// overflow boundary included, in several spellings.
func TestExactRoundingAgreesWithStrconv(t *testing.T) {
	rng := rand.New(rand.NewPCG(20, 21))
	xs := []float64{5e-324, 1e-323, math.Float64frombits(0x000fffffffffffff), 0x1p-1022, 1, 0.1, 1e23, 1e22,
		9007199254740992, 1e-7, 1e21, 1.7976931348623157e308, math.Nextafter(1.7976931348623157e308, 0)}
	for range 150 {
		x := math.Float64frombits(rng.Uint64() &^ (1 << 63))
		if !math.IsInf(x, 0) && !math.IsNaN(x) {
			xs = append(xs, x)
		}
	}
	for range 50 { // subnormals
		xs = append(xs, math.Float64frombits(rng.Uint64()>>12))
	}
	for _, x := range xs {
		for _, s := range []string{strconv.FormatFloat(x, 'e', -1, 64), strconv.FormatFloat(x, 'g', 25, 64), strconv.FormatFloat(x, 'e', 40, 64)} {
			agree(t, s)
			agree(t, "-"+s)
		}
		if x == math.MaxFloat64 {
			continue
		}
		digits, point := midpointDigits(x)
		for _, k := range []int{1, 16, 17, 19, 20, 21, 30, 100, len(digits)} {
			for _, s := range spellings(digits[:min(k, len(digits))], point) {
				agree(t, s)
				agree(t, "-"+s)
			}
		}
		above := digits + strings.Repeat("0", 900-len(digits)) + "1"
		for _, s := range spellings(above, point) {
			agree(t, s)
		}
	}
	for _, s := range []string{"0", "-0", "0.0", "-0.0e-0", "0e999999999999999999", "1e-400", "-1e-400", "1e309", "1e308",
		"17976931348623158079372897140530341507993413271003782693617377898044496829276475094664901797758720709633028641669288791094655554785194040263065748867150582068190890200070838367627385484581771153176447573027006985557136695962284291481986083493647529271907416844436551070434271155969950809304288017790417449779" + "2",
		"1" + strings.Repeat("0", 308), "1" + strings.Repeat("0", 309), "0." + strings.Repeat("0", 323) + "24703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125",
		"0." + strings.Repeat("0", 323) + "24703282292062327208828439643411068618252990130716238221279284125033775363510437593264991818081799618989828234772285886546332835517796989819938739800539093906315035659515570226392290858392449105184435931802849936536152500319370457678249219365623669863658480757001585769269903706311928279558551332927834338409351978015531246597263579574622766465272827220056374006485499977096599470454020828166226237857393450736339007967761930577506740176324673600968951340535537458516661134223766678604162159680461914467291840300530057530849048765391711386591646239524912623653881879636239373280423891018672348497668235089863388587925628302755995657524455507255189313690836254779186948667994968324049705821028513185451396213837722826145437693412532098591327667236328125" + strings.Repeat("0", 200) + "1",
	} {
		agree(t, s)
	}
}

// jsonNumber is the number grammar of RFC 8259 §6.
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?$`)

// FuzzParseDoubleAgreesWithStrconv: for any JSON number, ParseFloat
// gives the double nearest its exact value (strconv's, but for AGH-21),
// and ErrRange exactly when that is infinite; any other text, strconv's
// own syntax included ("+1", "Inf", "0x1p3"), is ErrSyntax.
func FuzzParseDoubleAgreesWithStrconv(f *testing.F) {
	for _, s := range hostileNumbers() {
		f.Add(s)
	}
	for _, s := range []string{"0", "-0.0", "1e23", "0.1", "1E+5", "123.456e-7", "01", "1.", ".5", "1e", "-", "inf", "0x1p3", "+1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4000 {
			return
		}
		got, err := ParseFloat(s)
		if _, ok := readNumberText(s); !ok {
			if !errors.Is(err, ErrSyntax) {
				t.Fatalf("%q: got %v %v, want ErrSyntax", s, got, err)
			}
			if jsonNumber.MatchString(s) {
				t.Fatalf("%q: a JSON number refused", s)
			}
			return
		}
		want, finite := nearest(t, s)
		if !finite {
			if !errors.Is(err, ErrRange) {
				t.Fatalf("%q: got %v %v, want ErrRange", s, got, err)
			}
			return
		}
		if err != nil || math.Float64bits(got) != math.Float64bits(want) {
			t.Fatalf("%q: got %v %v, want %v", s, got, err, want)
		}
	})
}

// TestNumberOfMoreThan800LeadingDigitsTakesItsOwnDouble: strconv's decimal
// fallback keeps the decimal point of a number at its 800th digit at
// most, so a number written with more than 800 digits before its point
// (or with no point), whose rounding that fallback decides, took a double
// 10^k too small: 1.5e-323 written as 901 digits and an exponent was 0,
// the midpoint of two doubles near 1e200 so written was about 1e99
// (docs/SPEC-DECISIONS.md AGH-21). Each now takes the double nearest its
// value.
func TestNumberOfMoreThan800LeadingDigitsTakesItsOwnDouble(t *testing.T) {
	for _, x := range []float64{1e-323, 1e200, 1e-200, 2.2250738585072014e-308} {
		digits, point := midpointDigits(x)
		long := digits + strings.Repeat("0", 900-len(digits)) + "1" // just above the midpoint
		for _, s := range []string{
			long + "e" + strconv.Itoa(point-len(long)),
			long[:850] + "." + long[850:] + "e" + strconv.Itoa(point-850),
		} {
			want, _ := nearest(t, s)
			got, err := ParseFloat(s)
			if err != nil || math.Float64bits(got) != math.Float64bits(want) {
				t.Errorf("%.30s… (%d digits, near %g): %v %v, want %v", s, len(long), x, got, err, want)
			}
		}
	}
}
