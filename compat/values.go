package compat

import (
	"encoding/json"
	"math/big"
	"strings"

	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// typeSet is a set of JSON types. "number" is numInt|numFrac: an integer
// value (including 1.0) has type integer, so integer ⊆ number.
type typeSet uint8

const (
	tNull typeSet = 1 << iota
	tBool
	tObject
	tArray
	tInt
	tFrac
	tString
	tAll = tNull | tBool | tObject | tArray | tInt | tFrac | tString
	tNum = tInt | tFrac
)

func typeBits(name string) (typeSet, bool) {
	switch name {
	case "null":
		return tNull, true
	case "boolean":
		return tBool, true
	case "object":
		return tObject, true
	case "array":
		return tArray, true
	case "integer":
		return tInt, true
	case "number":
		return tNum, true
	case "string":
		return tString, true
	}
	return 0, false
}

// typeOfKeyword reads a "type" keyword value; ok is false when malformed.
func typeOfKeyword(v any) (typeSet, bool) {
	switch x := v.(type) {
	case string:
		return typeBits(x)
	case []any:
		var t typeSet
		for _, e := range x {
			s, ok := e.(string)
			if !ok {
				return 0, false
			}
			b, ok := typeBits(s)
			if !ok {
				return 0, false
			}
			t |= b
		}
		return t, true
	}
	return 0, false
}

// typeOfValue is the type of one JSON value.
func typeOfValue(v any) typeSet {
	switch x := v.(type) {
	case nil:
		return tNull
	case bool:
		return tBool
	case map[string]any:
		return tObject
	case []any:
		return tArray
	case string:
		return tString
	case json.Number:
		// An integer: read exactly, without expanding its exponent. A
		// number whose exponent the checker does not read (ratOf) is not
		// known to be one.
		if d, ok := decimalOf(x); ok && !d.raw && d.exp >= 0 {
			return tInt
		}
		return tFrac
	}
	return 0
}

func (t typeSet) String() string {
	names := []string{}
	for _, e := range []struct {
		b typeSet
		n string
	}{{tNull, "null"}, {tBool, "boolean"}, {tObject, "object"}, {tArray, "array"}, {tInt, "integer"}, {tFrac, "number"}, {tString, "string"}} {
		if t&e.b != 0 {
			names = append(names, e.n)
		}
	}
	return strings.Join(names, ",")
}

// maxExpDigits bounds the digits of an exponent the checker reads: a
// number written with more is not read (ratOf) and only equals its own
// text.
const maxExpDigits = 4

// expUnread reports whether the exponent of the number s has more than
// maxExpDigits significant digits. Leading zeros do not count: `1e00001`
// is 10, as the bundle's validator reads it, and a number taken for
// unread there was equal only to its own text and never an integer, so
// `{"const":10}` was proven within `{"not":{"const":1e00001}}`. A bundle's
// schemas hold no exponent beyond ±400 (internal/offlineschema), so
// unread numbers never reach a verdict about a bundle.
func expUnread(s string) bool {
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		return len(strings.TrimLeft(strings.TrimLeft(s[i+1:], "+-"), "0")) > maxExpDigits
	}
	return false
}

// ratOf reads a JSON number exactly. Exponents are bounded so that a
// number cannot cost unbounded memory.
func ratOf(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	s := string(n)
	if expUnread(s) {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}

// decimal is a JSON number read exactly without expanding its exponent:
// its value is digits × 10^exp, negative when neg, digits holding no
// leading or trailing zero ("" and exp 0 for zero, never negative). raw:
// its exponent is written with more than maxExpDigits digits, so the
// checker does not read it (ratOf); then only digits is set, to its text.
// Two read numbers are equal exactly when their decimals are.
type decimal struct {
	neg    bool
	raw    bool
	digits string
	exp    int
}

// decimalOf reads the JSON number n (its grammar: a minus, an integer
// part, a fraction, an exponent); ok is false when n is not one. It
// costs the length of n, whatever its exponent.
func decimalOf(n json.Number) (d decimal, ok bool) {
	s := string(n)
	if expUnread(s) {
		return decimal{raw: true, digits: s}, schemagraph.NumberSyntax(s)
	}
	if !schemagraph.NumberSyntax(s) {
		return decimal{}, false
	}
	if s[0] == '-' {
		d.neg, s = true, s[1:]
	}
	mant, exp := s, 0
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		mant = s[:i]
		e := s[i+1:]
		neg := false
		if e[0] == '+' || e[0] == '-' {
			neg, e = e[0] == '-', e[1:]
		}
		for j := 0; j < len(e); j++ {
			exp = exp*10 + int(e[j]-'0')
		}
		if neg {
			exp = -exp
		}
	}
	intPart, frac := mant, ""
	if i := strings.IndexByte(mant, '.'); i >= 0 {
		intPart, frac = mant[:i], mant[i+1:]
	}
	digits := strings.TrimLeft(intPart+frac, "0")
	exp -= len(frac)
	trimmed := strings.TrimRight(digits, "0")
	exp += len(digits) - len(trimmed)
	if trimmed == "" {
		return decimal{}, true // zero, and -0 is zero
	}
	d.digits, d.exp = trimmed, exp
	return d, true
}

// intOf reads a non-negative integer keyword value (minLength, ...).
func intOf(v any) (*big.Rat, bool) {
	r, ok := ratOf(v)
	if !ok || !r.IsInt() || r.Sign() < 0 {
		return nil, false
	}
	return r, true
}

// equalWithin is JSON equality (numbers by value, objects by members)
// taking a unit of *left for each value it visits; once *left is below
// zero it stops and reports false (not proven equal), which every caller
// reads as "compare them the long way".
func equalWithin(a, b any, left *int) bool {
	*left--
	if *left < 0 {
		return false
	}
	switch x := a.(type) {
	case nil:
		return b == nil
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case string:
		y, ok := b.(string)
		return ok && x == y
	case json.Number:
		if y, ok := b.(json.Number); ok && (x == y || (plainInt(x) && plainInt(y))) {
			// Equal text, or two integers in canonical form: equal
			// exactly when the text is (no number parsing needed).
			return x == y
		}
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		// By value, as their canonical decimals (never expanded); a
		// number whose exponent the checker does not read (ratOf) only
		// equals its own text.
		dx, ok1 := decimalOf(x)
		dy, ok2 := decimalOf(y)
		if !ok1 || !ok2 || dx.raw || dy.raw {
			return x == y
		}
		return dx == dy
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equalWithin(x[i], y[i], left) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, xv := range x {
			yv, ok := y[k]
			if !ok || !equalWithin(xv, yv, left) {
				return false
			}
		}
		return true
	}
	return false
}

// refKeywords are the keywords whose value is a reference: its meaning
// is the schema it names, which depends on the base URI and, for
// "$dynamicRef" and "$recursiveRef", on the dynamic scope, never on its
// text alone. "$id" changes the base of the references under it.
var refKeywords = map[string]bool{"$ref": true, "$dynamicRef": true, "$recursiveRef": true, "$id": true}

// containsRefWithin reports whether a schema value holds a reference
// (refKeywords) anywhere, so that textual equality does not imply equal
// meaning, taking a unit of *left for each value it visits; once *left is below zero it stops and reports true (a
// reference may be there: the caller does not read the value as the
// same).
func containsRefWithin(v any, left *int) bool {
	*left--
	if *left < 0 {
		return true
	}
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if refKeywords[k] {
				return true
			}
			if containsRefWithin(e, left) {
				return true
			}
		}
	case []any:
		for _, e := range x {
			if containsRefWithin(e, left) {
				return true
			}
		}
	}
	return false
}

// plainInt reports whether n is an integer in canonical form: an optional
// minus, then "0" or digits not starting with 0, no fraction or exponent,
// and not "-0". Two such numbers are equal exactly when their text is.
func plainInt(n json.Number) bool {
	s := string(n)
	if strings.HasPrefix(s, "-") {
		s = s[1:]
		if s == "0" {
			return false
		}
	}
	if s == "" || (s[0] == '0' && len(s) > 1) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
