package amp

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestJSONValueShowsDifferentItemsAlike covers JSONValue's promise
// (inspect.go) to lose "nothing that would let two different items look
// alike", which `ampagent invoke`, `ampagent msg` and client.Call rely on
// to show a peer's CAP_RESULT, body or ext.
//
// Attack: a peer answers with a float where an integer is expected (or the
// other way round), or with one NaN for another: the items differ (Canonical
// keeps every float and every NaN payload exactly, AMP-9), and a signature
// over one does not verify over the other, yet the display is identical.
//
// Before (review 52): the float 1.0 (f9 3c00) rendered as `1`, like the
// integer 1; the float 100000.0 like the integer 100000 (strconv's shortest
// 'g' writes integral floats below 1e6 without a point or exponent); the
// float 0.0 like the integer 0; and every NaN, whatever its payload or
// sign, as {"float":"NaN"}.
//
// Should: two items that Canonical keeps apart render apart: an integral
// float with a point or exponent (`1.0`, `1e5`), and a NaN other than the
// canonical f97e00 with its bits (e.g. {"float":"NaN","bits":"7e01"}).
func TestJSONValueShowsDifferentItemsAlike(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"integer 1 and float 1.0", "01", "f93c00"},
		{"integer 100000 and float 100000.0", "1a000186a0", "fa47c35000"},
		{"integer 0 and float 0.0", "00", "f90000"},
		{"quiet NaN and NaN with a payload", "f97e00", "f97e01"},
		{"NaN and negative NaN", "f97e00", "f9fe00"},
		{"float -0.0 and integer 0", "00", "f98000"},
		{"float64 NaN with a payload and quiet NaN", "f97e00", "fb7ff8000000000001"},
	} {
		t.Run(tc.name, func(t *testing.T) { renderedApart(t, hx(tc.a), hx(tc.b)) })
	}
}

// TestJSONValueRendersFloatsApart pins the rendering JSONValue documents:
// an integral float keeps a point or an exponent, a NaN other than the
// canonical one shows the bits of its deterministic form, and the same
// float written longer renders the same.
func TestJSONValueRendersFloatsApart(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"f93c00", `1.0`},
		{"f98000", `-0.0`},
		{"fa47c35000", `100000.0`},
		{"fb3ff0000000000000", `1.0`},
		{"fb4415af1d78b58c40", `1e+20`},
		{"f93e00", `1.5`},
		{"f97e00", `{"float":"NaN"}`},
		{"fb7ff8000000000000", `{"float":"NaN"}`},
		{"f97e01", `{"float":"NaN","bits":"7e01"}`},
		{"f9fe00", `{"float":"NaN","bits":"fe00"}`},
		{"fb7ff8000000000001", `{"float":"NaN","bits":"7ff8000000000001"}`},
		{"f97c00", `{"float":"Infinity"}`},
	} {
		got, err := JSONValue(hx(tc.in))
		if err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		if string(got) != tc.want || !json.Valid(got) {
			t.Errorf("%s: got %s, want %s", tc.in, got, tc.want)
		}
	}
}

// renderedApart fails unless a and b, two items Canonical keeps apart (a
// pair that is one item in deterministic form is no finding), render as
// different JSON.
func renderedApart(t *testing.T, a, b []byte) {
	t.Helper()
	ca, err := Limits{}.Canonical(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := Limits{}.Canonical(b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(ca, cb) {
		t.Fatalf("%x and %x are one item in deterministic form: not a finding", a, b)
	}
	ja, err := JSONValue(a)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := JSONValue(b)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(ja, jb) {
		t.Fatalf("different items %x and %x both render as %s", ca, cb, ja)
	}
}
