package jcs

import (
	"bytes"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func read(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestRFC8785PublishedExamples: the examples of RFC 8785 §3.2.2 (numbers,
// string escapes, literals) and §3.2.3 (member order by UTF-16 code units,
// with a surrogate pair sorting before U+FB33) canonicalize byte for byte.
func TestRFC8785PublishedExamples(t *testing.T) {
	for _, name := range []string{"rfc8785-3.2.2", "rfc8785-3.2.3"} {
		got, err := Canonical(read(t, name+".input.json"))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if want := read(t, name+".output.json"); !bytes.Equal(got, want) {
			t.Fatalf("%s:\ngot  %s\nwant %s", name, got, want)
		}
	}
}

// TestRFC8785AppendixBNumbers: the IEEE 754 doubles of RFC 8785 Appendix B
// format as ECMAScript does; NaN and Infinity have no JSON form.
func TestRFC8785AppendixBNumbers(t *testing.T) {
	for _, tc := range []struct {
		bits uint64
		want string // "" for refused
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"},
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x7fffffffffffffff, ""},
		{0x7ff0000000000000, ""},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	} {
		got, err := FormatDouble(math.Float64frombits(tc.bits))
		if tc.want == "" {
			if !errors.Is(err, ErrNumber) {
				t.Errorf("%016x: got %q, %v, want ErrNumber", tc.bits, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%016x: got %q, %v, want %q", tc.bits, got, err, tc.want)
			continue
		}
		// The text read back is the same double, and is its own form.
		if again, err := CanonicalNumber(got); err != nil || again != got {
			t.Errorf("%s: reformats as %q, %v", got, again, err)
		}
	}
}

// TestHostileJSONIsRefusedByName: every document a second reader could
// read differently, or that has no double for a number, is refused with
// the error naming why, and the error never quotes the input.
func TestHostileJSONIsRefusedByName(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      error
	}{
		{"duplicate member", `{"a":1,"a":2}`, ErrDuplicateMember},
		{"duplicate nested member", `[{"b":{"x":1,"x":1}}]`, ErrDuplicateMember},
		{"duplicate by escape", `{"a":1,"\u0061":2}`, ErrDuplicateMember},
		{"lone high surrogate", `{"a":"\ud800"}`, ErrMalformed},
		{"lone low surrogate", `["\udc00x"]`, ErrMalformed},
		{"invalid utf-8", "[\"\xff\"]", ErrMalformed},
		{"trailing data", `{} {}`, ErrMalformed},
		{"trailing garbage", `0A0`, ErrMalformed},
		{"missing comma", `[1 2]`, ErrMalformed},
		{"trailing comma", `{"a":1,}`, ErrMalformed},
		{"empty", ``, ErrMalformed},
		{"number too large", `[1e400]`, ErrNumber},
		{"too deep", strings.Repeat("[", MaxDepth+2) + strings.Repeat("]", MaxDepth+2), ErrTooDeep},
	} {
		_, err := Canonical([]byte(tc.doc))
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
		if err != nil && tc.doc != "" && strings.Contains(err.Error(), tc.doc) {
			t.Errorf("%s: error %q quotes the input", tc.name, err)
		}
	}
	if _, err := Canonical([]byte(strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1))); err != nil {
		t.Fatalf("nesting at the bound refused: %v", err)
	}
}

// TestEscapesAndNumbersTakeTheirOneForm: the same value written several
// ways has one canonical form (the reason a signature covers it).
func TestEscapesAndNumbersTakeTheirOneForm(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`"\u0041\/\u00e9"`, `"A/é"`},
		{`"\u001f\u007f"`, `"\u001f` + "\x7f" + `"`},
		{`["\b\f\n\r\t"]`, `["\b\f\n\r\t"]`},
		{`[1.0, -0, 1E2, 0.10, 1e-7, 1E30]`, `[1,0,100,0.1,1e-7,1e+30]`},
		{`{"b": [], "a": {}, "": null}`, `{"":null,"a":{},"b":[]}`},
	} {
		got, err := Canonical([]byte(tc.in))
		if err != nil || string(got) != tc.want {
			t.Errorf("%s: got %s, %v, want %s", tc.in, got, err, tc.want)
		}
	}
}

// TestMarshalRefusesWhatParseNeverReturns: a tree built by hand with a
// duplicate name or a foreign type has no canonical form.
func TestMarshalRefusesWhatParseNeverReturns(t *testing.T) {
	if _, err := Marshal(Object{{"a", true}, {"a", false}}); !errors.Is(err, ErrDuplicateMember) {
		t.Fatalf("duplicate: %v", err)
	}
	if _, err := Marshal([]any{map[string]any{}}); !errors.Is(err, ErrNotJSON) {
		t.Fatalf("map: %v", err)
	}
	if _, err := Marshal("\xff"); !errors.Is(err, ErrNotJSON) {
		t.Fatalf("invalid utf-8: %v", err)
	}
	o := Object{{"b", "x"}, {"a", "y"}}
	if got, _ := Marshal(o.Without("b")); string(got) != `{"a":"y"}` {
		t.Fatalf("Without: %s", got)
	}
	if v, ok := o.Get("b"); !ok || v != "x" {
		t.Fatalf("Get: %v %v", v, ok)
	}
}

// FormatDouble is CanonicalNumber for a double already parsed; NaN and the
// infinities are ErrNumber.
func FormatDouble(f float64) (string, error) {
	var tmp [32]byte
	b, err := appendDouble(tmp[:0], f)
	if err != nil {
		return "", err
	}
	return string(b), nil
}
