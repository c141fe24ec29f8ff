package jcs

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"unicode/utf8"
)

// MaxDepth is the nesting bound of Canonical: arrays and objects inside
// each other at most this deep.
const MaxDepth = 32

// Error is an error of this package: a constant, so that callers match it
// with errors.Is and nothing can change it.
type Error string

// Error returns the text of e.
func (e Error) Error() string { return string(e) }

// The errors of Parse, Canonical and Marshal. None quotes the input.
const (
	// ErrMalformed: not one JSON value (a syntax error, invalid UTF-8, a
	// lone surrogate escape, trailing data).
	ErrMalformed Error = "jcs: not one I-JSON value"
	// ErrDuplicateMember: an object names a member twice.
	ErrDuplicateMember Error = "jcs: duplicate object member name"
	// ErrTooDeep: arrays and objects nested deeper than the bound.
	ErrTooDeep Error = "jcs: JSON nested too deeply"
	// ErrNumber: a number with no IEEE 754 double value (out of range).
	ErrNumber Error = "jcs: number outside the IEEE 754 double range"
	// ErrNotJSON: Marshal met a value that is not of the tree's types.
	ErrNotJSON Error = "jcs: value has no canonical JSON form"
)

// Member is one object member.
type Member struct {
	Name  string
	Value any
}

// Object is a JSON object as Parse reads it: its members in document
// order, names unique.
type Object []Member

// Get returns the value of the member named name.
func (o Object) Get(name string) (any, bool) {
	for _, m := range o {
		if m.Name == name {
			return m.Value, true
		}
	}
	return nil, false
}

// Without returns a copy of o without the member named name.
func (o Object) Without(name string) Object {
	out := make(Object, 0, len(o))
	for _, m := range o {
		if m.Name != name {
			out = append(out, m)
		}
	}
	return out
}

// Canonical returns the RFC 8785 form of the JSON text data, nested at most
// MaxDepth deep.
func Canonical(data []byte) ([]byte, error) {
	v, err := Parse(data, MaxDepth)
	if err != nil {
		return nil, err
	}
	return Marshal(v)
}

// Parse reads data, exactly one I-JSON value with arrays and objects nested
// at most maxDepth deep, as a tree: nil, bool, string, json.Number (its
// text as written, checked to have a double value), []any and Object.
// It is ParseLimited with no bound on the number of values.
func Parse(data []byte, maxDepth int) (any, error) {
	return ParseLimited(data, maxDepth, 0)
}

// Marshal returns the RFC 8785 form of a tree of the types Parse returns
// (map[string]any and string-keyed members are not among them: build an
// Object).
func Marshal(v any) ([]byte, error) {
	return AppendCanonical(nil, v)
}

// AppendCanonical appends the RFC 8785 form of v, a tree as Marshal takes
// it, to dst: a caller that knows about how long the form is sizes dst
// once.
func AppendCanonical(dst []byte, v any) ([]byte, error) {
	return appendCanonical(dst, v)
}

func appendCanonical(buf []byte, v any) ([]byte, error) {
	switch t := v.(type) {
	case nil:
		return append(buf, "null"...), nil
	case bool:
		return strconv.AppendBool(buf, t), nil
	case string:
		if !utf8.ValidString(t) {
			return nil, ErrNotJSON
		}
		return appendString(buf, t), nil
	case json.Number:
		return AppendCanonicalNumber(buf, string(t))
	case []any:
		buf = append(buf, '[')
		for i, x := range t {
			if i > 0 {
				buf = append(buf, ',')
			}
			var err error
			if buf, err = appendCanonical(buf, x); err != nil {
				return nil, err
			}
		}
		return append(buf, ']'), nil
	case Object:
		return appendObject(buf, t, "", false)
	}
	return nil, ErrNotJSON
}

// AppendCanonicalWithout appends the RFC 8785 form of o without its
// member named skip (a digest or a proof over the rest of a document),
// copying no member.
func AppendCanonicalWithout(dst []byte, o Object, skip string) ([]byte, error) {
	return appendObject(dst, o, skip, true)
}

func appendObject(buf []byte, o Object, skip string, skipping bool) ([]byte, error) {
	order := canonicalOrder(o)
	buf = append(buf, '{')
	written := 0
	for i := range o {
		m := o[i]
		if order != nil {
			m = o[order[i]]
		}
		if i > 0 {
			prev := i - 1
			if order != nil {
				prev = int(order[prev])
			}
			if o[prev].Name == m.Name {
				return nil, ErrDuplicateMember
			}
		}
		if skipping && m.Name == skip {
			continue
		}
		if written++; written > 1 {
			buf = append(buf, ',')
		}
		if !utf8.ValidString(m.Name) {
			return nil, ErrNotJSON
		}
		buf = appendString(buf, m.Name)
		buf = append(buf, ':')
		var err error
		if buf, err = appendCanonical(buf, m.Value); err != nil {
			return nil, err
		}
	}
	return append(buf, '}'), nil
}

// canonicalOrder returns the indexes of o's members in canonical order,
// or nil when they already are in it: four bytes a member, never a copy
// of the members.
func canonicalOrder(o Object) []int32 {
	sorted := true
	for i := 1; i < len(o) && sorted; i++ {
		sorted = compareUTF16(o[i-1].Name, o[i].Name) <= 0
	}
	if sorted {
		return nil
	}
	order := make([]int32, len(o))
	for i := range order {
		order[i] = int32(i)
	}
	// Names are unique or refused, so an unstable sort serves.
	slices.SortFunc(order, func(a, b int32) int { return compareUTF16(o[a].Name, o[b].Name) })
	return order
}

// compareUTF16 compares strings by their UTF-16 code units without
// converting them. UTF-8 byte order is code point order, which is UTF-16
// order except that a supplementary character (a surrogate pair,
// 0xD800-0xDBFF first; UTF-8 lead byte 0xF0-0xF4) sorts below one of
// U+E000-U+FFFF (lead byte 0xEE or 0xEF) and above all else: utf16Byte
// moves those lead bytes (never continuation bytes, 0x80-0xBF) so that
// bytewise order is UTF-16 order.
func compareUTF16(a, b string) int {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == n {
		return len(a) - len(b)
	}
	return int(utf16Byte(a[i])) - int(utf16Byte(b[i]))
}

func utf16Byte(c byte) byte {
	switch {
	case c < 0xEE || c > 0xF4:
		return c
	case c >= 0xF0: // 0xF0-0xF4 -> 0xEE-0xF2
		return c - 2
	}
	return c + 5 // 0xEE, 0xEF -> 0xF3, 0xF4
}

// appendString appends s with the escapes of RFC 8785 §3.2.2.2, the runs
// that need none copied at once.
func appendString(buf []byte, s string) []byte {
	buf = append(buf, '"')
	run := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		buf = append(buf, s[run:i]...)
		run = i + 1
		switch c {
		case '"':
			buf = append(buf, `\"`...)
		case '\\':
			buf = append(buf, `\\`...)
		case '\b':
			buf = append(buf, `\b`...)
		case '\f':
			buf = append(buf, `\f`...)
		case '\n':
			buf = append(buf, `\n`...)
		case '\r':
			buf = append(buf, `\r`...)
		case '\t':
			buf = append(buf, `\t`...)
		default:
			buf = append(buf, `\u00`...)
			buf = append(buf, "0123456789abcdef"[c>>4], "0123456789abcdef"[c&0xf])
		}
	}
	buf = append(buf, s[run:]...)
	return append(buf, '"')
}

// CanonicalNumber formats a JSON number as ECMAScript's Number.toString
// does for its IEEE 754 double value (RFC 8785 §3.2.2.3): the shortest
// digits that read back as the same double, plain notation from 1e-6 up to
// 1e21, exponent notation outside, -0 as 0. A number outside the double
// range is ErrNumber.
func CanonicalNumber(s string) (string, error) {
	if smallInteger(s) {
		return s, nil
	}
	var tmp [32]byte
	b, err := AppendCanonicalNumber(tmp[:0], s)
	return string(b), err
}

// IsCanonicalNumber reports whether the JSON number s is written in its
// RFC 8785 form, without allocating.
func IsCanonicalNumber(s string) bool {
	if smallInteger(s) {
		return true
	}
	var tmp [32]byte
	b, err := AppendCanonicalNumber(tmp[:0], s)
	return err == nil && string(b) == s
}

// AppendCanonicalNumber appends CanonicalNumber(s) to dst.
func AppendCanonicalNumber(dst []byte, s string) ([]byte, error) {
	if smallInteger(s) {
		return append(dst, s...), nil
	}
	f, err := parseDouble(s)
	if err != nil {
		return nil, err
	}
	return appendDouble(dst, f)
}

// smallInteger reports whether s is an integer of at most 15 digits in
// plain form (no leading zero, not -0): exactly a double, and written as
// ECMAScript writes it.
func smallInteger(s string) bool {
	d := s
	if len(d) > 0 && d[0] == '-' {
		d = d[1:]
	}
	if len(d) == 0 || len(d) > 15 || d[0] == '0' && (len(d) > 1 || len(s) > 1) {
		return false
	}
	for i := 0; i < len(d); i++ {
		if d[i] < '0' || d[i] > '9' {
			return false
		}
	}
	return true
}

func appendDouble(dst []byte, f float64) ([]byte, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return nil, ErrNumber
	}
	if f == 0 {
		return append(dst, '0'), nil
	}
	if a := math.Abs(f); a >= 1e-6 && a < 1e21 {
		return strconv.AppendFloat(dst, f, 'f', -1, 64), nil
	}
	n := len(dst)
	dst = strconv.AppendFloat(dst, f, 'e', -1, 64) // d.ddde±XX
	e := n + slices.Index(dst[n:], 'e')
	// Drop the exponent's leading zeros: e+09 -> e+9.
	z := e + 2
	for z < len(dst)-1 && dst[z] == '0' {
		z++
	}
	return append(dst[:e+2], dst[z:]...), nil
}
