package compat

// Third review of the compat listed-value mend (bd6fd7b): canonical forms
// (canonKey, decimalOf) against the previous equality and against exact
// JSON equality, and the verdicts that rest on them.

import (
	"encoding/json"
	"fmt"
	"math/big"
	"regexp"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/offlineschema"
)

func r3check(t *testing.T, producer, acceptor string) Report {
	t.Helper()
	p := NewSource(memLoader{files: map[string][]byte{"s.json": []byte(producer)}})
	a := NewSource(memLoader{files: map[string][]byte{"s.json": []byte(acceptor)}})
	return Subsumes(p, "s.json", a, "s.json")
}

// TestNumberWithFiveDigitExponentIsNotAssumedUnequalToItsValue: a number
// whose exponent is written with more than maxExpDigits digits (1e00001,
// which is 10) is taken as equal only to its own text and as not an
// integer. Every JSON Schema validator reads it as 10, an integer, so the
// checker's "compatible" below is false: the producer sends a value the
// acceptor rejects (a signed claim that lies). The 5 digits are leading
// zeros, now not counted (expUnread). Exponents of more than four
// significant digits stay unread: a bundle's schemas hold none
// (internal/offlineschema refuses exponents beyond ±400), so no verdict
// about a bundle meets one.
func TestNumberWithFiveDigitExponentIsNotAssumedUnequalToItsValue(t *testing.T) {
	for _, c := range []struct{ name, producer, acceptor string }{
		{"not const spelled apart", `{"const":10}`, `{"not":{"const":1e00001}}`},
		{"not const zero spelled apart", `{"const":0}`, `{"not":{"const":0e00000}}`},
		{"producer const spelled apart", `{"const":1e00001}`, `{"not":{"const":10}}`},
		{"bounded integer range", `{"type":"integer","minimum":10,"maximum":10}`, `{"not":{"enum":[1e00001]}}`},
		{"oneOf branches taken as disjoint", `{"const":10}`, `{"oneOf":[{"enum":[10]},{"enum":[1e00001]}]}`},
		{"oneOf branches, upper case exponent", `{"const":10}`, `{"oneOf":[{"const":10},{"const":1E+00001}]}`},
		{"integer const dropped as not an integer", `{"type":"integer","const":1e00001}`, `{"type":"string"}`},
		{"integer enum dropped as not an integer", `{"type":"integer","enum":[1e00001]}`, `{"const":11}`},
		{"raw against raw", `{"const":1e00001}`, `{"not":{"const":10e00000}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if r := r3check(t, c.producer, c.acceptor); r.Verdict == Compatible {
				t.Errorf("%s ⊆ %s: compatible, but the producer's value is rejected by the acceptor", c.producer, c.acceptor)
			}
		})
	}
}

// r3oldEqual is equal as of bd6fd7b^ (compat/values.go), kept here to
// compare the canonical forms with.
func r3oldEqual(a, b any) bool {
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
			return x == y
		}
		ra, ok1 := r3oldRatOf(x)
		rb, ok2 := r3oldRatOf(b)
		if !ok1 || !ok2 {
			y, ok := b.(json.Number)
			return ok && x == y
		}
		return ra.Cmp(rb) == 0
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !r3oldEqual(x[i], y[i]) {
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
			if !ok || !r3oldEqual(xv, yv) {
				return false
			}
		}
		return true
	}
	return false
}

func r3oldRatOf(v any) (*big.Rat, bool) {
	n, ok := v.(json.Number)
	if !ok {
		return nil, false
	}
	s := string(n)
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		if len(strings.TrimLeft(s[i+1:], "+-")) > 4 {
			return nil, false
		}
	}
	return new(big.Rat).SetString(s)
}

// r3exactKey is a reference canonical form under exact JSON equality:
// numbers as sign, significant digits and an exponent of any length
// (big.Int), never expanded.
func r3exactKey(v any) string {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		neg := strings.HasPrefix(s, "-")
		s = strings.TrimPrefix(s, "-")
		exp := new(big.Int)
		if i := strings.IndexAny(s, "eE"); i >= 0 {
			e := strings.TrimPrefix(s[i+1:], "+")
			if _, ok := exp.SetString(e, 10); !ok {
				panic("bad exponent " + e)
			}
			s = s[:i]
		}
		ip, fr := s, ""
		if i := strings.IndexByte(s, '.'); i >= 0 {
			ip, fr = s[:i], s[i+1:]
		}
		d := strings.TrimLeft(ip+fr, "0")
		exp.Sub(exp, big.NewInt(int64(len(fr))))
		tr := strings.TrimRight(d, "0")
		exp.Add(exp, big.NewInt(int64(len(d)-len(tr))))
		if tr == "" {
			return "N0"
		}
		sign := "+"
		if neg {
			sign = "-"
		}
		return "N" + sign + tr + "e" + exp.String() + ";"
	case []any:
		var b strings.Builder
		fmt.Fprintf(&b, "A%d[", len(x))
		for _, e := range x {
			b.WriteString(r3exactKey(e))
		}
		return b.String() + "]"
	case map[string]any:
		return "O" + canonObjectWith(x, r3exactKey)
	}
	return canonKey(v)
}

func canonObjectWith(m map[string]any, f func(any) string) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	// insertion sort: small maps only
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j] < keys[j-1]; j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d{", len(keys))
	for _, k := range keys {
		fmt.Fprintf(&b, "%d:%s", len(k), k)
		b.WriteString(f(m[k]))
	}
	return b.String() + "}"
}

// r3texts is generated JSON texts: numbers in many spellings of few
// values, strings with escapes, objects in member orders, nested arrays.
func r3texts() []string {
	mants := []string{"0", "-0", "1", "-1", "10", "1.0", "1.500", "1.5", "15", "0.1", "0.15", "100", "0.01", "10.00", "123456789012345678901234567890", "1.23456789012345678901234567890"}
	exps := []string{"", "e0", "E0", "e+0", "e-0", "e1", "E+1", "e-1", "e2", "e+02", "e-2", "E-02", "e0001", "e-0001", "e00001", "e+00001", "e-00001", "e9999", "e-9999", "e10000", "e-10000", "e09999"}
	var out []string
	for _, m := range mants {
		for _, e := range exps {
			out = append(out, m+e)
		}
	}
	out = append(out, "0.000001e-9999", "1e-10005", "10e99998", "1e99999", "1000e-0003",
		`"a"`, `"\u0061"`, `"\u00e9"`, `"é"`, `"\/"`, `"/"`, `"\ud83d\ude00"`, `"😀"`, `""`, `"1"`, `"\u0000"`,
		`null`, `true`, `false`, `[]`, `{}`, `[[]]`, `[[],[]]`, `[1,"a"]`, `["a",1]`, `[1.0,"\u0061"]`, `[[1e1]]`, `[[10]]`,
		`{"a":1,"b":2}`, `{"b":2,"a":1}`, `{"b":2.0,"a":1e0}`, `{"a":{"b":[1]}}`, `{"a":{"b":[1.00]}}`, `{"\u0061":1}`,
		`{"a":[]}`, `{"a":{}}`, `{"ab":1}`, `{"a":"b1"}`, `["ab"]`, `["a","b"]`, `[""]`, `[null]`, `[0]`, `[-0]`, `[0e5]`)
	return out
}

// unreadExponent matches a number whose exponent has more than
// maxExpDigits significant digits: the checker does not read it, and a
// bundle's schemas hold none (internal/offlineschema refuses exponents
// beyond ±400).
var unreadExponent = regexp.MustCompile(`[eE][+-]?0*[1-9][0-9]{4,}`)

// zeroPaddedExponent matches an exponent written with leading zeros,
// which the previous equal did not read (the finding these tests cover).
var zeroPaddedExponent = regexp.MustCompile(`[eE][+-]?0[0-9]`)

func r3values(t *testing.T) ([]string, []any) {
	t.Helper()
	var texts []string
	var vals []any
	for _, s := range r3texts() {
		if unreadExponent.MatchString(s) {
			continue // unread numbers: never in a bundle (|exponent| <= 400), equal only to their text
		}
		v, err := parseJSON([]byte(s))
		if err != nil {
			t.Fatalf("%s: %v", s, err)
		}
		texts, vals = append(texts, s), append(vals, v)
	}
	return texts, vals
}

// TestCanonicalFormAgreesWithPreviousEquality: canonKey gives two values
// the same form exactly when the previous equal (big.Rat) held, over
// every pair of the generated values.
func TestCanonicalFormAgreesWithPreviousEquality(t *testing.T) {
	texts, vals := r3values(t)
	bad := 0
	for i := range vals {
		for j := range vals {
			if zeroPaddedExponent.MatchString(texts[i]) || zeroPaddedExponent.MatchString(texts[j]) {
				continue // the previous equal took 1e00001 for unread: the exact test covers them
			}
			if same, eq := canonKey(vals[i]) == canonKey(vals[j]), r3oldEqual(vals[i], vals[j]); same != eq {
				if bad++; bad <= 10 {
					t.Errorf("%s vs %s: same form %v, previous equal %v", texts[i], texts[j], same, eq)
				}
			}
			if equal(vals[i], vals[j]) != r3oldEqual(vals[i], vals[j]) {
				t.Errorf("%s vs %s: equal disagrees with the previous equal", texts[i], texts[j])
			}
		}
	}
}

// TestCanonicalFormIsExactJSONEquality: the same comparison against exact
// JSON equality (numbers by value, whatever the exponent's spelling:
// 1e00001 and 10 are one value), over every read number (exponents of at
// most four significant digits, a bundle's being at most ±400).
func TestCanonicalFormIsExactJSONEquality(t *testing.T) {
	texts, vals := r3values(t)
	bad := 0
	for i := range vals {
		for j := range vals {
			if same, eq := canonKey(vals[i]) == canonKey(vals[j]), r3exactKey(vals[i]) == r3exactKey(vals[j]); same != eq {
				if bad++; bad <= 10 {
					t.Errorf("%s vs %s: same form %v, equal as JSON %v", texts[i], texts[j], same, eq)
				}
			}
		}
	}
	if bad > 10 {
		t.Errorf("%d pairs disagree in all", bad)
	}
}

// TestTypeOfNumberWithLongExponentCoversInteger: 1e00001 is the integer
// 10; typeOfValue must not say it is not one (the producer's facts drop
// it under "type":"integer").
func TestTypeOfNumberWithLongExponentCoversInteger(t *testing.T) {
	for _, s := range []string{"1e00001", "1E+00001", "0e00000", "-5e00000", "1e-00000", "25e-00001"[:0] + "5e+0000"} {
		if typeOfValue(json.Number(s))&tInt == 0 {
			t.Errorf("%s: type %s, but it is an integer", s, typeOfValue(json.Number(s)))
		}
	}
}

// TestClaimWithExponentZerosIsFalseUnderTheBundleValidator: the same
// schemas pass the bundle's own compile limits (offlineschema reads the
// exponent "00001" as 1, within its ±400), and its validator accepts 10
// under the producer and rejects it under the acceptor, while Subsumes
// says compatible: a claim build signs and import re-derives and accepts.
func TestClaimWithExponentZerosIsFalseUnderTheBundleValidator(t *testing.T) {
	for _, c := range []struct{ producer, acceptor, witness string }{
		{`{"const":10}`, `{"not":{"const":1e00001}}`, `10`},
		{`{"type":"integer","const":1e00001}`, `{"type":"string"}`, `10`},
		{`{"const":10}`, `{"oneOf":[{"enum":[10]},{"enum":[1E+00001]}]}`, `10`},
	} {
		pf := map[string]json.RawMessage{"schema.json": json.RawMessage(c.producer)}
		af := map[string]json.RawMessage{"schema.json": json.RawMessage(c.acceptor)}
		ps, as := compiled(t, pf), compiled(t, af)
		if ps == nil || as == nil {
			t.Fatalf("%s / %s: the bundle compiler refuses them", c.producer, c.acceptor)
		}
		v, err := offlineschema.ValueFromJSON([]byte(c.witness))
		if err != nil {
			t.Fatal(err)
		}
		if ps.Validate(v) != nil || as.Validate(v) == nil {
			t.Fatalf("%s: not a witness (producer %v, acceptor %v)", c.witness, ps.Validate(v), as.Validate(v))
		}
		r := Subsumes(NewSource(loaderOf(pf)), "schema.json", NewSource(loaderOf(af)), "schema.json")
		if r.Verdict == Compatible {
			t.Errorf("%s ⊆ %s: compatible, but %s is valid under the producer and not under the acceptor", c.producer, c.acceptor, c.witness)
		}
	}
}
