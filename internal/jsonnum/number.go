package jsonnum

import (
	"errors"
	"math"
	"math/big"
	"strconv"
	"sync"
)

// The errors of ParseFloat.
var (
	// ErrSyntax: the text is not a number of the JSON grammar.
	ErrSyntax = errors.New("jsonnum: not a json number")
	// ErrRange: the number's double is infinite (its magnitude is at
	// least the midpoint of the largest double and 2^1024).
	ErrRange = errors.New("jsonnum: number beyond the doubles")
)

// ParseFloat returns the double nearest the JSON number s (RFC 8259 §6),
// ties to even, as strconv.ParseFloat(s, 64) specifies; -0 for a negative
// number that rounds to zero. It is ErrSyntax when s is not of the JSON
// grammar (a sign +, a leading zero, "Inf", hexadecimal: texts strconv
// reads), and ErrRange when the double is infinite.
//
// strconv.ParseFloat rounds most numbers in well under a microsecond, but
// falls back to a decimal algorithm whose cost grows with the distance of
// the number's exponent from zero for two kinds of number a peer may
// write at will: one whose double is subnormal (5e-324, 1e-320) and one
// of more than 19 digits that lies near a rounding boundary (the midpoint
// of two doubles, cut to 20 digits): 10 to 100 µs each near 1e-308 and
// 1e+308, a thousand times a plain number (docs/SPEC-DECISIONS.md AGH-20).
// That fallback also keeps the decimal point of a number of more than 800
// digits before it at the 800th, so such a number took a double 10^k too
// small (AGH-21). Those numbers are rounded here instead, exactly and in
// time linear in their text (numberText.double); strconv keeps the texts
// StrconvFast vouches for by their decimal place alone
// (numberText.strconvFastByPlace; docs/SPEC-DECISIONS.md JSON-12).
func ParseFloat(s string) (float64, error) {
	return parseFloat(s, strconv.ParseFloat)
}

// parseFloat is ParseFloat with conv, strconv.ParseFloat, the conversion
// of the numbers it makes cheaply (numberText.strconvFastByPlace): a parameter,
// so that a test counts what reaches it on its own call
// (docs/SPEC-DECISIONS.md STYLE-2).
func parseFloat(s string, conv func(string, int) (float64, error)) (float64, error) {
	d, ok := readNumberText(s)
	if !ok {
		return 0, ErrSyntax
	}
	if fast, sure := d.strconvFastByPlace(s); !fast || !sure {
		return d.double() // one exact rounding, where telling takes two
	}
	f, err := conv(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, ErrRange // of the grammar, so only out of range
	}
	return f, nil
}

// StrconvFast reports whether s is a JSON number that strconv.ParseFloat
// rounds in about the time it takes to read it, and to the double
// ParseFloat gives: a reader bound to strconv (encoding/json's float64
// decoding) may be handed such numbers only, and a reader that charges
// numbers strconv rounds slowly charges the others. That is a text of at
// most 800 bytes that is zero, or whose double is normal and which
// strconv's Eisel-Lemire path decides (numberText.strconvFast), or one of
// more than 19 digits within 10^±30, where strconv's decimal fallback,
// when taken, costs at most about a microsecond (docs/SPEC-DECISIONS.md
// JSON-12). It allocates nothing.
func StrconvFast(s string) bool {
	d, ok := readNumberText(s)
	return ok && d.strconvFast(s)
}

// What strconv.ParseFloat (Go's https://go.dev/src/internal/strconv/atof.go, atof64) rounds
// on its fast paths: it reads the first strconvDigits digits of a number
// (leading zeros left out) as a uint64 m and the point as the exponent q
// of m × 10^q, and, unless a pure float computation is exact, takes the
// double Eisel-Lemire's algorithm (https://go.dev/src/internal/strconv/atofeisel.go,
// eiselLemire64) gives m × 10^q, rounded to 53 bits; for a text of more
// digits (one with more nonzero digits after them), only when it gives
// (m+1) × 10^q the same double, so that the digits it dropped cannot
// change it. Eisel-Lemire gives up on a result beyond the normal doubles
// (a subnormal, 0x7FF), and on an exact tie, which only a number of at
// most 19 digits within 10^-27 and 10^42 can be: there strconv's decimal
// fallback shifts a few times only. The fallback's cost grows with the
// number's distance from 10^0 (measured, Go 1.26, the 2-core build
// machine, for the midpoint of two doubles cut to 20 digits: 0.3 to 0.9
// µs within 10^±30, 1.7 µs at 10^50, 4 µs at 10^100, 14 µs at 10^200,
// 25 µs at 10^300; 13 to 28 µs for a subnormal and for 1e309, where a
// plain number takes 25 to 80 ns).
const (
	// strconvDigits is how many digits strconv's fast paths read.
	strconvDigits = 19
	// cheapPoint bounds the numbers of more than strconvDigits digits whose
	// decimal fallback is cheap: within 10^±cheapPoint.
	cheapPoint = 30
	// normalLow and normalHigh are the decimal places (0.D × 10^point) at
	// either end of the normal doubles: 10^(normalLow-1) < 2^-1022 <
	// 10^normalLow and 10^(normalHigh-1) < MaxFloat64 < 10^normalHigh, so a
	// number whose point lies strictly between is normal, one outside is
	// not, and one of those two decades is rounded to tell.
	normalLow  = -307
	normalHigh = 309
)

// strconvFast is StrconvFast of d, read from s: the one rule of what
// strconv rounds fast. Its decimal place and length decide most numbers
// (strconvFastByPlace); the others, of more than 19 digits beyond
// 10^±30 or in the decade at either end of the normal doubles, are
// rounded to tell (eiselLemireDecides).
func (d numberText) strconvFast(s string) bool {
	if fast, sure := d.strconvFastByPlace(s); sure {
		return fast
	}
	return d.eiselLemireDecides()
}

// strconvFastByPlace is strconvFast where d's length, digits and decimal
// place decide it (sure), without rounding. ParseFloat hands strconv
// only the numbers it vouches for: those it is not sure of, ParseFloat
// rounds exactly itself, in one rounding where telling would take two.
// A text of more than 800 bytes is left out (the decimal fallback
// misreads some: AGH-21), which also keeps strconv's exponent, which it
// stops reading at 10,000, the number's.
func (d numberText) strconvFastByPlace(s string) (fast, sure bool) {
	switch {
	case len(s) > maxExactDigits:
		return false, true
	case d.n == 0:
		return true, true // a zero: strconv's fast paths give ±0
	case d.point < normalLow || d.point > normalHigh:
		return false, true // subnormal, zero or beyond the doubles
	case d.n <= strconvDigits && normalLow < d.point && d.point < normalHigh:
		return true, true
	case d.n > strconvDigits && -cheapPoint <= d.point && d.point <= cheapPoint:
		return true, true
	}
	return false, false
}

// eiselLemireDecides reports whether strconv's Eisel-Lemire path decides
// d: the 53-bit rounding, with no lower bound on the exponent, of m × 10^q
// (the first strconvDigits digits of d, as strconv reads them) is a normal
// double, and, where d has more digits, that of (m+1) × 10^q is the same.
// Strictly inside the normal doubles m × 10^q and (m+1) × 10^q are
// normal, and strconv rounds the 19-digit text of each on its fast path
// (a tie, which only 10^-27 to 10^42 holds, on a decimal fallback a few
// shifts long), so there it asks strconv, about 0.1 µs; in the decade at
// either end, where strconv would fall back, it rounds exactly
// (converter.roundUint). No allocation.
func (d numberText) eiselLemireDecides() bool {
	var m uint64
	k := 0
	for i := 0; i < len(d.mant) && k < strconvDigits; i++ {
		if d.mant[i] != '.' {
			m = m*10 + uint64(d.mant[i]-'0')
			k++
		}
	}
	q := d.point - int64(k)
	if normalLow < d.point && d.point < normalHigh { // and so d.n > strconvDigits
		var lo, hi [32]byte
		a, _ := strconv.ParseFloat(string(appendDecimal(lo[:0], m, q)), 64)
		b, _ := strconv.ParseFloat(string(appendDecimal(hi[:0], m+1, q)), 64)
		return a == b
	}
	c := converters.Get().(*converter)
	defer converters.Put(c)
	m1, e1 := c.roundUint(m, q)
	if e1 < -1074 || e1 > 1023-52 {
		return false // not a normal double
	}
	if d.n <= strconvDigits {
		return true
	}
	m2, e2 := c.roundUint(m+1, q)
	return m1 == m2 && e1 == e2
}

// appendDecimal appends the JSON text of m × 10^q to b.
func appendDecimal(b []byte, m uint64, q int64) []byte {
	b = strconv.AppendUint(b, m, 10)
	b = append(b, 'e')
	return strconv.AppendInt(b, q, 10)
}

// numberText is a JSON number read as its sign and significant digits:
// its value is 0.D × 10^point, D the n digits of mant (a slice of the text,
// which may hold the decimal point) without leading or trailing zeros; n
// is 0 for a zero.
type numberText struct {
	neg   bool
	mant  string
	n     int
	point int64
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// IsNumber reports whether s is a number of the JSON grammar (RFC 8259
// §6), the text ParseFloat refuses as ErrSyntax when it is not: one pass,
// no rounding, for a caller that needs only to tell a syntax error from
// a number StrconvFast does not vouch for.
func IsNumber(s string) bool {
	_, ok := readNumberText(s)
	return ok
}

// readNumberText reads s, a number of the RFC 8259 §6 grammar (false for
// anything else), in one pass; an exponent of
// more than 12 digits saturates, far outside the doubles either way.
func readNumberText(s string) (numberText, bool) {
	var d numberText
	i := 0
	if i < len(s) && s[i] == '-' {
		d.neg = true
		i++
	}
	intStart := i
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	if i == intStart || s[intStart] == '0' && i-intStart > 1 {
		return d, false
	}
	intEnd, end := i, i
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && isDigit(s[i]); i++ {
		}
		if i == intEnd+1 {
			return d, false
		}
		end = i
	}
	var exp int64
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := i < len(s) && s[i] == '-'
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		start := i
		for ; i < len(s) && isDigit(s[i]); i++ {
			if exp < 1e12 {
				exp = exp*10 + int64(s[i]-'0')
			}
		}
		if i == start {
			return d, false
		}
		if neg {
			exp = -exp
		}
	}
	if i != len(s) {
		return d, false
	}
	first, last := -1, -1
	for j := intStart; j < end; j++ {
		if c := s[j]; c != '.' && c != '0' {
			if first < 0 {
				first = j
			}
			last = j
		}
	}
	if first < 0 {
		return d, true // a zero
	}
	d.mant = s[first : last+1]
	d.n = len(d.mant)
	if first < intEnd && last > intEnd {
		d.n-- // the point
	}
	if first < intEnd {
		d.point = int64(intEnd-first) + exp
	} else {
		d.point = -int64(first-intEnd-1) + exp
	}
	return d, true
}

// maxExactDigits is how many significant digits decide the rounding of
// any decimal to a double: the midpoint of two doubles has at most 767,
// so the digits past 800 only tell whether more follows (the sticky bit;
// strconv's decimal keeps as many).
const maxExactDigits = 800

// double is the double nearest d, ties to even, as strconv.ParseFloat
// rounds; ErrRange when that is infinite. The value is A/B, with A the
// first maxExactDigits digits (and a half unit more when digits follow)
// and B a power of ten, so one division of numbers of at most some 3,700
// bits gives the 53 bits and whether the rest is below, at or above half.
func (d numberText) double() (float64, error) {
	zero := 0.0
	if d.neg {
		zero = math.Copysign(0, -1)
	}
	switch {
	case d.n == 0:
		return zero, nil
	case d.point > 309: // at least 10^309, over every double
		return 0, ErrRange
	case d.point < -323: // under 10^-324, nearer 0 than 2^-1074
		return zero, nil
	}
	c := converters.Get().(*converter)
	defer converters.Put(c)
	m, e := c.round(d)
	if e > 1023-52 {
		return 0, ErrRange
	}
	f := math.Ldexp(float64(m), e) // exact: m < 2^53 and e >= -1074
	if d.neg {
		f = -f
	}
	return f, nil
}

// converter holds the big numbers of one rounding, kept in a pool so that
// their arrays serve the next number: a document of numbers costs no
// allocation per number.
type converter struct {
	a, b, q, r, t, p big.Int
}

var converters = sync.Pool{New: func() any { return new(converter) }}

// round returns the mantissa m (below 2^53) and exponent e of the double
// nearest d, m·2^e, e at least -1074 (more than 971: infinite).
func (c *converter) round(d numberText) (uint64, int) {
	kept := min(d.n, maxExactDigits)
	a := &c.a
	a.SetUint64(0)
	var chunk uint64
	k := 0
	for i := 0; i < len(d.mant) && kept > 0; i++ {
		if d.mant[i] == '.' {
			continue
		}
		chunk = chunk*10 + uint64(d.mant[i]-'0')
		kept--
		if k++; k == 19 || kept == 0 {
			a.Mul(a, c.t.SetUint64(pow10u64[k]))
			a.Add(a, c.t.SetUint64(chunk))
			chunk, k = 0, 0
		}
	}
	c.scale(d.point - int64(min(d.n, maxExactDigits)))
	if d.n > maxExactDigits { // digits follow: A + 1/2, strictly between A and A + 1
		a.Lsh(a, 1)
		a.Add(a, c.t.SetUint64(1))
		c.b.Lsh(&c.b, 1)
	}
	return c.divide(-1074)
}

// roundUint returns the mantissa m (2^52 to 2^53) and exponent e of the
// 53-bit rounding, ties to even, of u × 10^exp10, whatever its exponent
// (e below -1074: no normal double), as Eisel-Lemire rounds. u is not 0
// and |exp10| at most 800+323.
func (c *converter) roundUint(u uint64, exp10 int64) (uint64, int) {
	c.a.SetUint64(u)
	c.scale(exp10)
	return c.divide(math.MinInt)
}

// scale makes A/B the value A × 10^exp10: A times the power, or B the
// power.
func (c *converter) scale(exp10 int64) {
	if exp10 >= 0 {
		c.t.Mul(&c.a, c.pow10(int(exp10)))
		c.a.Set(&c.t)
		c.b.SetUint64(1)
	} else {
		c.b.Set(c.pow10(int(-exp10)))
	}
}

// divide returns the mantissa m and exponent e of A/B rounded to 53 bits,
// ties to even, or to fewer where e would be below minExp (a subnormal).
func (c *converter) divide(minExp int) (uint64, int) {
	a, b := &c.a, &c.b
	// A·2^-e / B is in [2^54, 2^56): q has 55 or 56 bits.
	e := a.BitLen() - b.BitLen() - 55
	if e < 0 {
		a.Lsh(a, uint(-e))
	} else {
		b.Lsh(b, uint(e))
	}
	q, r := &c.q, &c.r
	q.QuoRem(a, b, r)
	shift := q.BitLen() - 53
	if e+shift < minExp { // subnormal: fewer bits
		shift = minExp - e
	}
	m := c.t.Rsh(q, uint(shift)).Uint64()
	half := q.Bit(shift-1) == 1
	rest := r.Sign() != 0 || q.TrailingZeroBits() < uint(shift-1)
	if half && (rest || m&1 == 1) {
		m++
	}
	e += shift
	if m == 1<<53 {
		m >>= 1
		e++
	}
	return m, e
}

// pow10u64 are the powers of ten a uint64 holds.
var pow10u64 = func() (p [20]uint64) {
	p[0] = 1
	for i := 1; i < len(p); i++ {
		p[i] = p[i-1] * 10
	}
	return p
}()

// pow10Steps are 10^(19j) up to past the largest power round asks for
// (10^(800+323)), built once.
var pow10Steps = sync.OnceValue(func() []*big.Int {
	steps := make([]*big.Int, (maxExactDigits+324)/19+2)
	steps[0] = big.NewInt(1)
	for j := 1; j < len(steps); j++ {
		steps[j] = new(big.Int).Mul(steps[j-1], new(big.Int).SetUint64(pow10u64[19]))
	}
	return steps
})

// pow10 returns 10^k, 0 <= k <= 800+323, in c.p.
func (c *converter) pow10(k int) *big.Int {
	return c.p.Mul(pow10Steps()[k/19], c.t.SetUint64(pow10u64[k%19]))
}
