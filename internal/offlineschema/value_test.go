package offlineschema

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// cborCases are shared with the fuzz seed corpus.
var cborCases = []struct {
	name string
	hex  string
	want any
	err  amp.ErrName // "" for success
	code amp.Code
	at   string // the pointer the message must name
}{
	{name: "uint 0", hex: "00", want: int64(0)},
	{name: "uint 23", hex: "17", want: int64(23)},
	{name: "uint 24", hex: "1818", want: int64(24)},
	{name: "uint max int64", hex: "1b7fffffffffffffff", want: int64(math.MaxInt64)},
	{name: "uint 2^63", hex: "1b8000000000000000", want: uint64(1 << 63)},
	{name: "uint max", hex: "1bffffffffffffffff", want: uint64(math.MaxUint64)},
	{name: "negint -1", hex: "20", want: int64(-1)},
	{name: "negint min int64", hex: "3b7fffffffffffffff", want: int64(math.MinInt64)},
	{name: "negint below int64", hex: "3b8000000000000000", want: json.Number("-9223372036854775809")},
	{name: "negint -2^64", hex: "3bffffffffffffffff", want: json.Number("-18446744073709551616")},
	{name: "text", hex: "6461c3a962", want: "aéb"},
	{name: "empty text", hex: "60", want: ""},
	{name: "empty array", hex: "80", want: []any{}},
	{name: "empty map", hex: "a0", want: map[string]any{}},
	{name: "map", hex: "a2616101616282f5f6", want: map[string]any{"a": int64(1), "b": []any{true, nil}}},
	{name: "false", hex: "f4", want: false},
	{name: "true", hex: "f5", want: true},
	{name: "null", hex: "f6", want: nil},
	{name: "half 1.0", hex: "f93c00", want: 1.0},
	{name: "half 65504", hex: "f97bff", want: 65504.0},
	{name: "half smallest subnormal", hex: "f90001", want: math.Ldexp(1, -24)},
	{name: "half -2", hex: "f9c000", want: -2.0},
	{name: "single 100000", hex: "fa47c35000", want: 100000.0},
	{name: "double 1.1", hex: "fb3ff199999999999a", want: 1.1},
	{name: "double max", hex: "fb7fefffffffffffff", want: math.MaxFloat64},

	{name: "byte string", hex: "40", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation, at: `the root`},
	{name: "nested byte string", hex: "a1617882014101", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation, at: `"/x/1"`},
	{name: "tag", hex: "c11a514b67b0", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation, at: `the root`},
	{name: "bignum tag", hex: "c249010000000000000000", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
	{name: "undefined", hex: "a162c3a1f7", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation, at: `"/á"`},
	{name: "simple 16", hex: "f0", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
	{name: "simple 255", hex: "f8ff", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
	{name: "half NaN", hex: "f97e00", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
	{name: "half +Inf", hex: "f97c00", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
	{name: "single -Inf", hex: "faff800000", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
	{name: "double NaN", hex: "fb7ff8000000000000", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
	{name: "integer key", hex: "a10101", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation, at: `the root`},
	{name: "bytes key", hex: "81a16161a1410001", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation, at: `"/0/a"`},
	{name: "key with slash and tilde", hex: "a1637e2f7840", err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation, at: `"/~0~1x"`},

	{name: "empty", hex: "", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "truncated text", hex: "62 61", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "truncated head", hex: "19 01", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "huge array header", hex: "9b ffffffffffffffff", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "huge map header", hex: "bb ffffffffffffffff", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "huge text header", hex: "7b ffffffffffffffff", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "indefinite array", hex: "9f ff", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "break", hex: "ff", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "reserved info", hex: "1c", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "invalid utf-8", hex: "62 c328", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "invalid utf-8 key", hex: "a1 61ff 01", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "duplicate key", hex: "a2 6161 01 6161 02", err: "invalid_message", code: amp.CodeInvalidMessage},
	{name: "trailing bytes", hex: "00 00", err: "invalid_message", code: amp.CodeInvalidMessage},
}

func TestValueFromCBOR(t *testing.T) {
	for _, tt := range cborCases {
		t.Run(tt.name, func(t *testing.T) {
			item := unhex(t, tt.hex)
			v, err := ValueFromCBOR(item)
			if tt.err != "" {
				e := ampErr(t, err, tt.err, tt.code)
				if tt.at != "" && !strings.Contains(e.Message, " at "+tt.at+" ") {
					t.Errorf("message %q does not name %s", e.Message, tt.at)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(v, tt.want) {
				t.Fatalf("got %#v, want %#v", v, tt.want)
			}
			// Round trip: the value re-encodes to the deterministic item.
			out, err := ToCBOR(v)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out, item) {
				t.Errorf("ToCBOR = %x, want %x", out, item)
			}
		})
	}
}

func TestValueFromCBORNegativeZero(t *testing.T) {
	v, err := ValueFromCBOR(unhex(t, "f98000"))
	if f, ok := v.(float64); err != nil || !ok || f != 0 || !math.Signbit(f) {
		t.Fatalf("got %#v, %v", v, err)
	}
	if out, _ := ToCBOR(v); !bytes.Equal(out, unhex(t, "f98000")) {
		t.Errorf("ToCBOR(-0) = %x", out)
	}
}

func TestValueFromCBORDepth(t *testing.T) {
	nest := func(n int) []byte {
		return append(bytes.Repeat([]byte{0x81}, n), 0x00)
	}
	if _, err := ValueFromCBOR(nest(MaxDepth)); err != nil {
		t.Errorf("depth %d refused: %v", MaxDepth, err)
	}
	ampErr(t, func() error { _, err := ValueFromCBOR(nest(MaxDepth + 1)); return err }(), ErrLimitExceeded, amp.CodeInvalidMessage)
	maps := append(bytes.Repeat([]byte{0xa1, 0x61, 'k'}, MaxDepth+1), 0x00)
	ampErr(t, func() error { _, err := ValueFromCBOR(maps); return err }(), ErrLimitExceeded, amp.CodeInvalidMessage)
}

func TestValueFromCBORLongPointer(t *testing.T) {
	key := strings.Repeat("k", 1000)
	item, err := amp.Marshal(map[string]any{key: map[string]any{"x": []byte{1}}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ValueFromCBOR(item)
	e := ampErr(t, err, ErrNotJSONCompatible, amp.CodeSchemaViolation)
	if len(e.Message) > 200 || strings.Contains(e.Message, key) {
		t.Errorf("message not clipped: %d bytes", len(e.Message))
	}
}

func TestValueFromJSON(t *testing.T) {
	tests := []struct {
		in   string
		want any
		err  amp.ErrName
		code amp.Code
	}{
		{in: `{"a": 1, "b": [2.5, "x", true, null, {}], "c": -18446744073709551616}`, want: map[string]any{
			"a": json.Number("1"), "b": []any{json.Number("2.5"), "x", true, nil, map[string]any{}},
			"c": json.Number("-18446744073709551616")}},
		{in: " \n 1e308 \t", want: json.Number("1e308")},
		{in: `18446744073709551615`, want: json.Number("18446744073709551615")},
		{in: `1e-400`, want: json.Number("1e-400")},
		{in: `[]`, want: []any{}},
		{in: `"é"`, want: "é"},

		{in: ``, err: ErrInvalidJSON},
		{in: `   `, err: ErrInvalidJSON},
		{in: `{"a": 1} x`, err: ErrInvalidJSON},
		{in: `{}{}`, err: ErrInvalidJSON},
		{in: `1 2`, err: ErrInvalidJSON},
		{in: `[1,]`, err: ErrInvalidJSON},
		{in: `{"a": 1`, err: ErrInvalidJSON},
		{in: `{"a": 1, "a": 2}`, err: ErrInvalidJSON},
		{in: "\"\xff\"", err: ErrInvalidJSON},
		{in: `NaN`, err: ErrInvalidJSON},
		{in: `18446744073709551616`, err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
		{in: `-18446744073709551617`, err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
		{in: `1e309`, err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
		{in: `1e-401`, err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
		{in: `[1e999999999]`, err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
		{in: "0." + strings.Repeat("1", 100), err: ErrNotJSONCompatible, code: amp.CodeSchemaViolation},
		{in: strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1), err: ErrLimitExceeded},
	}
	for _, tt := range tests {
		v, err := ValueFromJSON([]byte(tt.in))
		if tt.err != "" {
			e := ampErr(t, err, tt.err, tt.code)
			noLeak(t, e, "999999999", "111111")
			continue
		}
		if err != nil || !reflect.DeepEqual(v, tt.want) {
			t.Errorf("ValueFromJSON(%.40s) = %#v, %v; want %#v", tt.in, v, err, tt.want)
		}
	}
	if _, err := ValueFromJSON([]byte(strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth))); err != nil {
		t.Errorf("depth %d refused: %v", MaxDepth, err)
	}
	big := make([]byte, MaxJSONSize+1)
	for i := range big {
		big[i] = ' '
	}
	big[0] = '1'
	_, err := ValueFromJSON(big)
	ampErr(t, err, ErrInvalidJSON, 0)
}

func TestToCBOR(t *testing.T) {
	tests := []struct {
		in   any
		want string
		err  amp.ErrName
	}{
		{in: json.Number("1"), want: "01"},
		{in: json.Number("-1"), want: "20"},
		{in: json.Number("1.5"), want: "f93e00"},
		{in: json.Number("1e2"), want: "f95640"},
		{in: json.Number("18446744073709551615"), want: "1bffffffffffffffff"},
		{in: json.Number("-18446744073709551616"), want: "3bffffffffffffffff"},
		{in: json.Number("-9223372036854775809"), want: "3b8000000000000000"},
		{in: int8(-2), want: "21"},
		{in: int16(300), want: "19012c"},
		{in: uint(7), want: "07"},
		{in: uint8(255), want: "18ff"},
		{in: float32(0.5), want: "f93800"},
		{in: map[string]any{"bb": int32(1), "a": []any{nil, false, "x"}}, want: "a2616183f6f46178626262 01"},

		{in: json.Number("18446744073709551616"), err: ErrNotJSONCompatible},
		{in: json.Number("0x10"), err: ErrNotJSONCompatible},
		{in: json.Number("1e999"), err: ErrNotJSONCompatible},
		{in: json.Number(""), err: ErrNotJSONCompatible},
		{in: math.NaN(), err: ErrNotJSONCompatible},
		{in: float32(math.Inf(1)), err: ErrNotJSONCompatible},
		{in: []byte{1}, err: ErrNotJSONCompatible},
		{in: map[string]string{"a": "b"}, err: ErrNotJSONCompatible},
		{in: []string{"a"}, err: ErrNotJSONCompatible},
		{in: struct{}{}, err: ErrNotJSONCompatible},
		{in: "\xff", err: ErrNotJSONCompatible},
		{in: map[string]any{"\xff": 1}, err: ErrNotJSONCompatible},
		{in: map[string]any{"a": []any{1, map[string]any{"b": []byte{}}}}, err: ErrNotJSONCompatible},
	}
	for _, tt := range tests {
		out, err := ToCBOR(tt.in)
		if tt.err != "" {
			ampErr(t, err, tt.err, 0)
			continue
		}
		if err != nil || !bytes.Equal(out, unhex(t, tt.want)) {
			t.Errorf("ToCBOR(%#v) = %x, %v; want %s", tt.in, out, err, tt.want)
		}
	}
	deep := any(int64(1))
	for i := 0; i < MaxDepth+1; i++ {
		deep = []any{deep}
	}
	_, err := ToCBOR(deep)
	ampErr(t, err, ErrLimitExceeded, 0)
}

// TestJSONCBORRoundTrip: a JSON value and its CBOR form validate alike and
// the CBOR form round-trips.
func TestJSONCBORRoundTrip(t *testing.T) {
	v, err := ValueFromJSON([]byte(`{"text": "héllo", "n": [1, -2, 3.25, 1e300, 18446744073709551615, -18446744073709551616], "o": {"x": null, "y": false}}`))
	if err != nil {
		t.Fatal(err)
	}
	item, err := ToCBOR(v)
	if err != nil {
		t.Fatal(err)
	}
	if !amp.DefaultLimits().IsCanonical(item) {
		t.Errorf("ToCBOR output %x is not deterministic", item)
	}
	w, err := ValueFromCBOR(item)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ToCBOR(w)
	if err != nil || !bytes.Equal(again, item) {
		t.Errorf("round trip: %x, %v; want %x", again, err, item)
	}
	want := map[string]any{"text": "héllo", "n": []any{int64(1), int64(-2), 3.25, 1e300, uint64(math.MaxUint64), json.Number("-18446744073709551616")},
		"o": map[string]any{"x": nil, "y": false}}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("got %#v", w)
	}
}
