package client

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/internal/jsonnum"
)

// Names of Call's own refusals, before anything is sent or after the
// verified reply arrived.
const (
	// ErrParamsEncoding: the params have no JSON form, or a number in
	// them has no CBOR form (code 0: the caller's own value).
	ErrParamsEncoding amp.ErrName = "params_not_encodable"
	// ErrResultType: the provider's result does not decode into Out
	// (4004; the result is not quoted).
	ErrResultType amp.ErrName = "result_type_mismatch"
	// ErrResultCost: decoding the provider's result into Out would hand
	// strconv more than MaxSlowResultNumbers numbers it rounds on its
	// decimal fallback (4004; the result is not quoted; nothing was
	// decoded).
	ErrResultCost amp.ErrName = "result_too_costly"
)

// MaxSlowResultNumbers bounds the numbers of a result that Call lets
// encoding/json round into Out's floats (float64, float32, an empty
// interface, a float field with the ",string" option) when strconv would
// round them on its decimal fallback (slowFor): 10 to 25 µs each on the
// 2-core build machine (a subnormal double, 5e-324; into a float32, any
// double beyond its range, 1e-300), a thousand times a plain number,
// and encoding/json cannot be made to round them otherwise. 64 such
// numbers cost about 1.6 ms; a result of more is ErrResultCost
// (docs/SPEC-DECISIONS.md JSON-9).
const MaxSlowResultNumbers = 64

// Call invokes the capability id ("name:version", as the keys of
// agent.Config.Handlers) on c's peer with in as the params and decodes the
// result into Out. in is encoded as encoding/json encodes it (json tags
// name the fields) and sent as CBOR; the result is decoded as
// encoding/json decodes it (amp.JSONValue's view of the CBOR). The reply
// is checked as Invoke checks it; a CAP_RESULT with status "error" is
// returned as its *amp.Error, named as Invoke names it: a provider's name
// that fails amp.ValidErrName is not in it, and Call returns no Result to
// read it from (Invoke does). A result whose numbers Out's floats would
// round slowly, more than MaxSlowResultNumbers of them, is ErrResultCost.
// For the exchange itself (the reply message,
// encryption, negotiation hints), use Invoke.
func Call[Out any](ctx context.Context, c *Client, id string, in any) (Out, error) {
	var out Out
	capID, err := capability.ParseID(id)
	if err != nil {
		return out, err
	}
	params, err := paramsCBOR(in)
	if err != nil {
		return out, err
	}
	res, _, err := c.Invoke(ctx, capability.Invoke{Capability: capID.Name, Version: capID.Version, Params: params})
	if err != nil {
		return out, err
	}
	data, err := amp.JSONValue(res.Result)
	if err != nil {
		return out, err
	}
	// JSON Schema calls a number with a zero fractional part an integer
	// (2020-12 validation §6.1.1), and providers whose numbers are
	// doubles send 1.0 for one; JSONValue writes it "1.0" for display
	// (AMP-16), which encoding/json refuses for an integer field.
	return decodeResult[Out](data)
}

// decodeResult decodes the view data into Out as encoding/json does, and
// when that fails, once more with its integral floats written as integers
// (integralFloats), so that an integer field takes 1.0 as 1, while every
// value Out keeps as bytes (a json.Unmarshaler, json.RawMessage among
// them, or a json.Number; holdsBytes) gets data as written, from the first
// decode: a caller who keeps the provider's bytes sees its float as the
// float it is (AMP-16). For such an Out the first decode is made inside a
// wrapper whose second member is set only when no Unmarshaler stopped
// encoding/json (which skips a mistyped value and goes on, but stops at
// an Unmarshaler's error), so the values taken from it are complete, and
// an Unmarshaler that refuses the bytes as written refuses the result. An
// Unmarshaler of Out thus runs at most twice on the provider's bytes.
// data must be one JSON value, as amp.JSONValue writes it: the wrapper
// takes it for the value of its first member. Before either decode, a
// result holding more than MaxSlowResultNumbers numbers that strconv
// would round on its decimal fallback into Out's floats is refused,
// ErrResultCost (slowNumbers; docs/SPEC-DECISIONS.md JSON-9).
func decodeResult[Out any](data []byte) (Out, error) {
	refused := amp.Named(amp.CodeSchemaViolation, ErrResultType, "the result does not fit the type it is decoded into")
	var out Out
	var r rounding
	r.of(reflect.TypeFor[Out](), map[reflect.Type]bool{})
	if r.any() && slowNumbers(data, r, MaxSlowResultNumbers) > MaxSlowResultNumbers {
		return out, amp.Named(amp.CodeSchemaViolation, ErrResultCost, "the result holds more than %d numbers that its type's floats would take a slow rounding for", MaxSlowResultNumbers)
	}
	if !keepsBytes(reflect.TypeFor[Out](), map[reflect.Type]bool{}) {
		if json.Unmarshal(data, &out) == nil {
			return out, nil
		}
		integral, ok := integralFloats(data)
		if out = *new(Out); !ok || json.Unmarshal(integral, &out) != nil {
			return *new(Out), refused
		}
		return out, nil
	}
	var written struct {
		V    Out  `json:"v"`
		Done bool `json:"done"`
	}
	doc := make([]byte, 0, len(data)+20)
	doc = append(append(append(doc, `{"v":`...), data...), `,"done":true}`...)
	err := json.Unmarshal(doc, &written)
	if err == nil {
		return written.V, nil
	}
	if !written.Done {
		return *new(Out), refused
	}
	// Its errors were mistyped values; those of integer fields given a
	// float, out serves.
	integral, ok := integralFloats(data)
	if !ok || json.Unmarshal(integral, &out) != nil {
		return *new(Out), refused
	}
	keepWritten(reflect.ValueOf(&out).Elem(), reflect.ValueOf(&written.V).Elem())
	return out, nil
}

// rounding says which floats encoding/json rounds a result's numbers
// into, with strconv, for a type: a float64 or an empty interface (f64),
// a float32 (f32), and a float field with the ",string" option, whose
// JSON string's text it rounds (quoted).
type rounding struct{ f64, f32, quoted bool }

// any reports whether encoding/json rounds any number for the type.
func (r rounding) any() bool { return r.f64 || r.f32 }

// of adds what encoding/json rounds into a value of type t: nothing
// inside a value it hands its bytes or text (holdsBytes), and nothing
// of a struct's fields it does not fill (unexported, or tagged "-").
// seen breaks the cycles of recursive types.
func (r *rounding) of(t reflect.Type, seen map[reflect.Type]bool) {
	if holdsBytes(t) || seen[t] {
		return
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Float64:
		r.f64 = true
	case reflect.Float32:
		r.f32 = true
	case reflect.Interface:
		r.f64 = r.f64 || t.NumMethod() == 0 // a number in an any: float64
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		r.of(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("json")
			if (!f.IsExported() && !f.Anonymous) || tag == "-" {
				continue
			}
			ft := f.Type
			if ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if k := ft.Kind(); (k == reflect.Float64 || k == reflect.Float32) && slices.Contains(strings.Split(tag, ",")[1:], "string") {
				r.quoted = true
			}
			r.of(f.Type, seen)
		}
	}
}

// slowNumbers counts, up to most+1, the numbers of the JSON text data
// (and, when r.quoted, the strings whose text is a number) that strconv
// would round on its decimal fallback into a float r names (slowFor):
// one pass that reads each number's digits once, no allocation but for
// a number of more than 32 bytes (its text handed to jsonnum) and a
// string with an escape when r.quoted.
func slowNumbers(data []byte, r rounding, most int) int {
	n := 0
	count := func(text []byte) bool {
		if slowFor(text, r) {
			n++
		}
		return n <= most
	}
	var str func(lit []byte, escaped bool) bool
	if r.quoted {
		str = func(lit []byte, escaped bool) bool { return count(stringText(lit, escaped)) }
	}
	scanJSON(data, func(i, j int) bool { return count(data[i:j]) }, str)
	return n
}

// scanJSON calls number with the offsets of each number of the JSON text
// data, and str, when not nil, with each string's literal (quotes
// included; escaped: it holds a backslash), in order; either returning
// false ends the scan. It reads data with jsonnum's Scanner, the one
// reader of a text's tokens by their bytes (docs/SPEC-DECISIONS.md
// JSON-13), and allocates nothing; it checks no grammar (what data is not
// JSON, encoding/json refuses).
func scanJSON(data []byte, number func(i, j int) bool, str func(lit []byte, escaped bool) bool) {
	sc := jsonnum.NewScanner(data)
	for {
		kind, i, j := sc.Next()
		switch kind {
		case 0:
			return
		case jsonnum.TokenString:
			if str != nil && !str(data[i:j], bytes.IndexByte(data[i:j], '\\') >= 0) {
				return
			}
		case jsonnum.TokenNumber:
			if !number(i, j) {
				return
			}
		}
	}
}

// stringText is the text of the JSON string lit (quotes included), as
// encoding/json reads it; nil when it does not read.
func stringText(lit []byte, escaped bool) []byte {
	if len(lit) < 2 {
		return nil
	}
	if !escaped {
		return lit[1 : len(lit)-1]
	}
	var s string
	if json.Unmarshal(lit, &s) != nil {
		return nil
	}
	return []byte(s)
}

// slowFor reports whether strconv.ParseFloat rounds the number s into a
// float r names on its decimal fallback, which costs it 10 to 25 µs
// where a plain number costs 20 to 60 ns (measured, Go 1.26, the 2-core
// build machine): into a float64, a number jsonnum.StrconvFast does not
// vouch for (the one rule of what strconv rounds fast,
// docs/SPEC-DECISIONS.md JSON-12: a subnormal double, 5e-324, a zero it
// underflows to, one beyond the doubles, or a number of more than 19
// digits beyond 10^±30 whose first 19 digits do not decide its double);
// into a float32, also one whose double is no normal float32 (1e-300,
// 1e+300). Its decimal place says which for all but the decade of
// either end of the float32's range, which jsonnum.ParseFloat rounds
// exactly. Anything else (a zero, a text that is no JSON number, which
// encoding/json refuses) is not slow.
func slowFor(s []byte, r rounding) bool {
	digits, p := decimalPlace(s)
	if digits == 0 {
		return false
	}
	text := string(s)
	if !jsonnum.StrconvFast(text) {
		return jsonnum.IsNumber(text) // not rounded: a slow number is refused, not read
	}
	if !r.f32 {
		return false
	}
	switch { // 10^-38 < 2^-126 < 10^-37; 10^38 < MaxFloat32 < 10^39
	case p < -37 || p > 39:
		return true
	case -37 < p && p < 39:
		return false
	}
	f, err := jsonnum.ParseFloat(text)
	a := math.Abs(f)
	return err != nil || a < 0x1p-126 || a > math.MaxFloat32
}

// decimalPlace reads the JSON number s as 0.D × 10^p: digits, the
// number of digits of D (leading zeros left out, none for a zero), and
// p, its exponent saturating far outside the doubles.
func decimalPlace(s []byte) (digits int, p int64) {
	i := 0
	if i < len(s) && s[i] == '-' {
		i++
	}
	for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
		if digits > 0 || s[i] != '0' {
			digits++
			p++
		}
	}
	if i < len(s) && s[i] == '.' {
		for i++; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			if digits == 0 && s[i] == '0' {
				p--
			} else {
				digits++
			}
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		neg := i < len(s) && s[i] == '-'
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		var e int64
		for ; i < len(s) && '0' <= s[i] && s[i] <= '9'; i++ {
			if e < 1e9 {
				e = e*10 + int64(s[i]-'0')
			}
		}
		if neg {
			e = -e
		}
		p += e
	}
	return digits, p
}

var (
	unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
	numberType      = reflect.TypeFor[json.Number]()
)

// holdsBytes reports whether encoding/json hands a value of type t the
// bytes of its JSON value (a json.Unmarshaler, json.RawMessage included,
// by value or pointer receiver) or keeps its text (json.Number).
func holdsBytes(t reflect.Type) bool {
	return t == numberType || t.Implements(unmarshalerType) || reflect.PointerTo(t).Implements(unmarshalerType)
}

// keepsBytes reports whether a value of type t holds, anywhere inside it
// (fields, pointers, elements, map values), a value holdsBytes names.
// seen breaks the cycles of recursive types.
func keepsBytes(t reflect.Type, seen map[reflect.Type]bool) bool {
	if holdsBytes(t) {
		return true
	}
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
		return keepsBytes(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if keepsBytes(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}

// keepWritten sets every value holdsBytes names inside dst (decoded from
// the rewritten view) to the one at the same place in src (decoded from
// the view as written, into the same type): the two decodes differ only
// in the numbers rewritten, so they have the same shape.
func keepWritten(dst, src reflect.Value) {
	t := dst.Type()
	if holdsBytes(t) {
		if dst.CanSet() {
			dst.Set(src)
		}
		return
	}
	switch t.Kind() {
	case reflect.Pointer:
		if !dst.IsNil() && !src.IsNil() {
			keepWritten(dst.Elem(), src.Elem())
		}
	case reflect.Struct:
		for i := range dst.NumField() {
			keepWritten(dst.Field(i), src.Field(i))
		}
	case reflect.Slice, reflect.Array:
		for i := range min(dst.Len(), src.Len()) {
			keepWritten(dst.Index(i), src.Index(i))
		}
	case reflect.Map:
		if dst.IsNil() || src.IsNil() || !dst.CanSet() || !keepsBytes(t.Elem(), map[reflect.Type]bool{}) {
			return
		}
		for _, k := range dst.MapKeys() {
			sv := src.MapIndex(k)
			if !sv.IsValid() {
				continue
			}
			v := reflect.New(t.Elem()).Elem()
			v.Set(dst.MapIndex(k))
			keepWritten(v, sv)
			dst.SetMapIndex(k, v)
		}
	}
}

// integralFloats rewrites a JSON text so that every number with a point
// or an exponent whose value is an integer of magnitude below 2^53 is
// written as that integer ("1.0" as "1"), in place: every other byte, key
// order and escapes included, stays as JSONValue wrote it (a re-encoded
// map would sort its keys, and encoding/json's case-folded field matching
// would then let a provider choose which of two keys fills a field). Each
// number's double is read by jsonnum.ParseFloat: a provider's result may
// hold any number of subnormal floats, which strconv rounds a thousand
// times slower than a plain number (docs/SPEC-DECISIONS.md AGH-20). ok is
// false when nothing was rewritten or the text does not decode. It reads
// the text by bytes (scanJSON), not by json.Decoder.Token, which
// allocated about 112 bytes an item, whatever the numbers, for a result
// that was then most often refused (JSON-10): it allocates only for the
// output and for a number it must round to tell (notIntegral).
func integralFloats(data []byte) ([]byte, bool) {
	if !json.Valid(data) {
		return nil, false
	}
	var out []byte
	last := 0
	scanJSON(data, func(i, j int) bool {
		n := data[i:j]
		if !bytes.ContainsAny(n, ".eE") || notIntegral(n) {
			return true
		}
		f, err := jsonnum.ParseFloat(string(n))
		if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
			return true
		}
		out = append(out, data[last:i]...)
		out = strconv.AppendInt(out, int64(f), 10)
		last = j
		return true
	}, nil)
	if out == nil {
		return nil, false
	}
	return append(out, data[last:]...), true
}

// notIntegral reports, from its digits alone, that the double of the
// JSON number n is no integer: it has at most 15 significant digits,
// some after its point, and lies above 10^-300 (0.D × 10^p with D of sig
// digits, trailing zeros left out, and -300 < p < sig). Its fraction is
// then at least 10^(p-15), more than half the spacing of the doubles
// near it (below 10^p · 2^-52), and its magnitude at least 10^-301, so
// it rounds to no integer, zero included. Other numbers are rounded to
// tell.
func notIntegral(n []byte) bool {
	digits, p := decimalPlace(n)
	end := len(n) // of the digits before the exponent
	if e := bytes.IndexAny(n, "eE"); e >= 0 {
		end = e
	}
	sig := digits
	for i := end - 1; i >= 0 && sig > 0 && (n[i] == '0' || n[i] == '.'); i-- {
		if n[i] == '0' {
			sig--
		}
	}
	return sig > 0 && sig <= 15 && -300 < p && p < int64(sig)
}

// paramsCBOR encodes in as JSON and then as deterministic CBOR: integer
// numbers as CBOR integers, other numbers as floats.
func paramsCBOR(in any) ([]byte, error) {
	data, err := json.Marshal(in)
	if err != nil {
		return nil, amp.Named(0, ErrParamsEncoding, "the params have no json form").WithCause(err)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, amp.Named(0, ErrParamsEncoding, "the params have no json form").WithCause(err)
	}
	v, err = cborModel(v)
	if err != nil {
		return nil, err
	}
	return amp.Marshal(v)
}

// cborModel replaces the json.Numbers in v (as decoded with UseNumber)
// by int64, uint64 or float64, the values amp.Marshal encodes as CBOR
// numbers; a number's double is jsonnum.ParseFloat's (a json.Number or
// json.RawMessage in the params may carry any text: strconv misreads one
// of more than 800 digits before its point, docs/SPEC-DECISIONS.md
// AGH-21). A value encoding/json produced nests no deeper than its own
// limit, so the recursion is bounded.
func cborModel(v any) (any, error) {
	switch x := v.(type) {
	case json.Number:
		s := string(x)
		if !strings.ContainsAny(s, ".eE") {
			if i, err := strconv.ParseInt(s, 10, 64); err == nil {
				return i, nil
			}
			if u, err := strconv.ParseUint(s, 10, 64); err == nil {
				return u, nil
			}
		}
		f, err := jsonnum.ParseFloat(s)
		if err != nil {
			return nil, amp.Named(0, ErrParamsEncoding, "a number in the params is out of range")
		}
		return f, nil
	case []any:
		for i, e := range x {
			m, err := cborModel(e)
			if err != nil {
				return nil, err
			}
			x[i] = m
		}
		return x, nil
	case map[string]any:
		for k, e := range x {
			m, err := cborModel(e)
			if err != nil {
				return nil, err
			}
			x[k] = m
		}
		return x, nil
	}
	return v, nil
}
