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

// strconvParseFloat is strconv.ParseFloat, the conversion of the numbers
// it makes cheaply (numberText.cheap); a variable so that a test can count
// what reaches it.
var strconvParseFloat = strconv.ParseFloat

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
// time linear in their text (numberText.double); strconv keeps the rest,
// texts of at most 800 bytes that its fast paths round.
func ParseFloat(s string) (float64, error) {
	d, ok := readNumberText(s)
	if !ok {
		return 0, ErrSyntax
	}
	if !d.strconvFast(s) {
		return d.double()
	}
	f, err := strconvParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, ErrRange // of the grammar, so only out of range
	}
	return f, nil
}

// StrconvFast reports whether s is a JSON number that strconv.ParseFloat
// rounds on its fast paths, in about the time it takes to read it and to
// the double ParseFloat gives: a reader bound to strconv (encoding/json's
// float64 decoding) may be handed such numbers only. It allocates nothing.
func StrconvFast(s string) bool {
	d, ok := readNumberText(s)
	return ok && d.strconvFast(s)
}

// strconvFast is StrconvFast of d, read from s: the one rule both
// ParseFloat and StrconvFast apply.
func (d numberText) strconvFast(s string) bool {
	return d.cheap() && len(s) <= maxExactDigits
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

// cheapDigits and cheapPoint bound the numbers left to strconv.ParseFloat:
// of at most 19 significant digits (its fast paths read them whole) and
// within 10^±30 (its decimal fallback, when taken, then shifts a few
// times only).
const (
	cheapDigits = 19
	cheapPoint  = 30
)

// cheap reports whether strconv.ParseFloat converts d in about the time it
// takes to read it.
func (d numberText) cheap() bool {
	return d.n <= cheapDigits && -cheapPoint <= d.point && d.point <= cheapPoint
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

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
	a, b := &c.a, &c.b
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
	exp10 := d.point - int64(min(d.n, maxExactDigits))
	if exp10 >= 0 {
		c.t.Mul(a, c.pow10(int(exp10)))
		a.Set(&c.t)
		b.SetUint64(1)
	} else {
		b.Set(c.pow10(int(-exp10)))
	}
	if d.n > maxExactDigits { // digits follow: A + 1/2, strictly between A and A + 1
		a.Lsh(a, 1)
		a.Add(a, c.t.SetUint64(1))
		b.Lsh(b, 1)
	}
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
	if e+shift < -1074 { // subnormal: fewer bits
		shift = -1074 - e
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
