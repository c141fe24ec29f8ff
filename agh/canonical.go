package agh

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"sort"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// maxDepth bounds the nesting of JSON this package reads.
const maxDepth = 32

var errNotCanonical = errors.New("value has no canonical JSON form")

// Canonical returns the RFC 8785 (JCS) serialization of the JSON text
// data: no whitespace, object members sorted by the UTF-16 code units of
// their names, strings with the minimal escapes, numbers in the ECMAScript
// form. Duplicate member names, invalid UTF-8, nesting deeper than 32 and
// non-finite numbers are refused.
func Canonical(data []byte) ([]byte, error) {
	// encoding/json replaces invalid UTF-8 and lone surrogate escapes with
	// U+FFFD: two different documents would share one canonical form (and
	// one digest). RFC 8785 §3.2.2.2 needs I-JSON strings: refuse both.
	if !utf8.Valid(data) {
		return nil, errors.New("invalid UTF-8")
	}
	if err := checkSurrogates(data); err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err == nil {
		return nil, errors.New("trailing data after the JSON value")
	}
	var buf bytes.Buffer
	if err := writeCanonical(&buf, v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// member is one object member, in document order.
type member struct {
	name  string
	value any
}

// readValue reads one JSON value, keeping objects as ordered members and
// refusing duplicate names.
func readValue(dec *json.Decoder, depth int) (any, error) {
	if depth > maxDepth {
		return nil, errors.New("JSON nested too deeply")
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var ms []member
			seen := map[string]bool{}
			for dec.More() {
				k, err := dec.Token()
				if err != nil {
					return nil, err
				}
				name, ok := k.(string)
				if !ok {
					return nil, errors.New("object member name is not a string")
				}
				if seen[name] {
					return nil, errors.New("duplicate object member name")
				}
				seen[name] = true
				v, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				ms = append(ms, member{name, v})
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			if ms == nil {
				ms = []member{}
			}
			return ms, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := readValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return arr, nil
		}
		return nil, errors.New("unexpected delimiter")
	case string:
		if !utf8.ValidString(t) {
			return nil, errors.New("invalid UTF-8 in a string")
		}
		return t, nil
	default:
		return t, nil // json.Number, bool, nil
	}
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
				return errors.New("lone UTF-16 surrogate in a string")
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return errors.New("lone UTF-16 surrogate in a string")
		default:
			i += 5
		}
	}
	return nil
}

func writeCanonical(buf *bytes.Buffer, v any) error {
	switch t := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		buf.WriteString(strconv.FormatBool(t))
	case string:
		writeString(buf, t)
	case json.Number:
		s, err := canonicalNumber(string(t))
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
	case []member:
		ms := append([]member(nil), t...)
		sort.Slice(ms, func(i, j int) bool { return lessUTF16(ms[i].name, ms[j].name) })
		buf.WriteByte('{')
		for i, m := range ms {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeString(buf, m.name)
			buf.WriteByte(':')
			if err := writeCanonical(buf, m.value); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return errNotCanonical
	}
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

// canonicalNumber formats a JSON number as ECMAScript's Number.toString
// does for its IEEE 754 double value (RFC 8785 §3.2.2.3).
func canonicalNumber(s string) (string, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(f, 0) || math.IsNaN(f) {
		return "", errNotCanonical
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
