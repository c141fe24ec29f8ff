package jcs

import (
	"bytes"
	"encoding/json"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
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
func Parse(data []byte, maxDepth int) (any, error) {
	// encoding/json replaces invalid UTF-8 and lone surrogate escapes with
	// U+FFFD: two different documents would share one canonical form (and
	// one digest). RFC 8785 §3.2.2.2 needs I-JSON strings: refuse both.
	if !utf8.Valid(data) {
		return nil, ErrMalformed
	}
	if err := checkSurrogates(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readValue(dec, 0, maxDepth)
	if err != nil {
		return nil, err
	}
	// Only whitespace may follow the value: anything else, valid JSON or
	// not, is trailing data.
	if _, err := dec.Token(); err != io.EOF {
		return nil, ErrMalformed
	}
	return v, nil
}

// readValue reads one JSON value, keeping objects as ordered members and
// refusing duplicate names.
func readValue(dec *json.Decoder, depth, maxDepth int) (any, error) {
	if depth > maxDepth {
		return nil, ErrTooDeep
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, ErrMalformed
	}
	switch t := tok.(type) {
	case json.Delim:
		if t == '{' {
			return readObject(dec, depth, maxDepth)
		}
		if t != '[' {
			return nil, ErrMalformed
		}
		arr := []any{}
		for dec.More() {
			v, err := readValue(dec, depth+1, maxDepth)
			if err != nil {
				return nil, err
			}
			arr = append(arr, v)
		}
		if _, err := dec.Token(); err != nil {
			return nil, ErrMalformed
		}
		return arr, nil
	case json.Number:
		if _, err := CanonicalNumber(string(t)); err != nil {
			return nil, err
		}
		return t, nil
	default:
		return t, nil // string, bool, nil
	}
}

func readObject(dec *json.Decoder, depth, maxDepth int) (any, error) {
	ms := Object{}
	seen := map[string]bool{}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return nil, ErrMalformed
		}
		name, ok := k.(string)
		if !ok {
			return nil, ErrMalformed
		}
		if seen[name] {
			return nil, ErrDuplicateMember
		}
		seen[name] = true
		v, err := readValue(dec, depth+1, maxDepth)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Member{name, v})
	}
	if _, err := dec.Token(); err != nil {
		return nil, ErrMalformed
	}
	return ms, nil
}

// checkSurrogates refuses a \u escape of a UTF-16 surrogate that is not
// a high surrogate followed by a \u escape of a low one. Backslashes occur
// only inside strings of valid JSON, so the text is scanned escape by
// escape without tracking strings.
func checkSurrogates(data []byte) error {
	hex4 := func(i int) (rune, bool) {
		if i+6 > len(data) || data[i] != '\\' || data[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(data[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		r, ok := hex4(i)
		if !ok {
			i++ // a two-character escape
			continue
		}
		switch {
		case r >= 0xD800 && r < 0xDC00:
			lo, ok := hex4(i + 6)
			if !ok || lo < 0xDC00 || lo > 0xDFFF {
				return ErrMalformed
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return ErrMalformed
		default:
			i += 5
		}
	}
	return nil
}

// Marshal returns the RFC 8785 form of a tree of the types Parse returns
// (map[string]any and string-keyed members are not among them: build an
// Object).
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case string:
		if !utf8.ValidString(t) {
			return ErrNotJSON
		}
		writeString(buf, t)
	case json.Number:
		s, err := CanonicalNumber(string(t))
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case []any:
		buf.WriteByte('[')
		for i, x := range t {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeCanonical(buf, x); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case Object:
		return writeObject(buf, t)
	default:
		return ErrNotJSON
	}
	return nil
}

func writeObject(buf *bytes.Buffer, o Object) error {
	ms := append(Object(nil), o...)
	sort.SliceStable(ms, func(i, j int) bool { return lessUTF16(ms[i].Name, ms[j].Name) })
	buf.WriteByte('{')
	for i, m := range ms {
		if i > 0 {
			if ms[i-1].Name == m.Name {
				return ErrDuplicateMember
			}
			buf.WriteByte(',')
		}
		if !utf8.ValidString(m.Name) {
			return ErrNotJSON
		}
		writeString(buf, m.Name)
		buf.WriteByte(':')
		if err := writeCanonical(buf, m.Value); err != nil {
			return err
		}
	}
	buf.WriteByte('}')
	return nil
}

// lessUTF16 orders strings by their UTF-16 code units (RFC 8785 §3.2.3).
func lessUTF16(a, b string) bool {
	ua, ub := utf16.Encode([]rune(a)), utf16.Encode([]rune(b))
	for i := 0; i < len(ua) && i < len(ub); i++ {
		if ua[i] != ub[i] {
			return ua[i] < ub[i]
		}
	}
	return len(ua) < len(ub)
}

// writeString writes s with the escapes of RFC 8785 §3.2.2.2.
func writeString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\f':
			buf.WriteString(`\f`)
		case '\n':
			buf.WriteString(`\n`)
		case '\r':
			buf.WriteString(`\r`)
		case '\t':
			buf.WriteString(`\t`)
		default:
			if r < 0x20 {
				buf.WriteString(`\u00`)
				buf.WriteByte("0123456789abcdef"[r>>4])
				buf.WriteByte("0123456789abcdef"[r&0xf])
			} else {
				buf.WriteRune(r)
			}
		}
	}
	buf.WriteByte('"')
}

// CanonicalNumber formats a JSON number as ECMAScript's Number.toString
// does for its IEEE 754 double value (RFC 8785 §3.2.2.3): the shortest
// digits that read back as the same double, plain notation from 1e-6 up to
// 1e21, exponent notation outside, -0 as 0. A number outside the double
// range is ErrNumber.
func CanonicalNumber(s string) (string, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", ErrNumber
	}
	return FormatDouble(f)
}

// FormatDouble is CanonicalNumber for a double already parsed; NaN and the
// infinities are ErrNumber.
func FormatDouble(f float64) (string, error) {
	if math.IsInf(f, 0) || math.IsNaN(f) {
		return "", ErrNumber
	}
	if f == 0 {
		return "0", nil
	}
	a := math.Abs(f)
	if a >= 1e-6 && a < 1e21 {
		return strconv.FormatFloat(f, 'f', -1, 64), nil
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(e, "e")
	sign := exp[0]
	exp = strings.TrimLeft(exp[1:], "0")
	return mant + "e" + string(sign) + exp, nil
}
