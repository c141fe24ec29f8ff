package client

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"reflect"
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
)

// Call invokes the capability id ("name:version", as the keys of
// agent.Config.Handlers) on c's peer with in as the params and decodes the
// result into Out. in is encoded as encoding/json encodes it (json tags
// name the fields) and sent as CBOR; the result is decoded as
// encoding/json decodes it (amp.JSONValue's view of the CBOR). The reply
// is checked as Invoke checks it; a CAP_RESULT with status "error" is
// returned as its *amp.Error, named as Invoke names it: a provider's name
// that fails amp.ValidErrName is not in it, and Call returns no Result to
// read it from (Invoke does). For the exchange itself (the reply message,
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
// takes it for the value of its first member.
func decodeResult[Out any](data []byte) (Out, error) {
	refused := amp.Named(amp.CodeSchemaViolation, ErrResultType, "the result does not fit the type it is decoded into")
	var out Out
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
// false when nothing was rewritten or the text does not decode.
func integralFloats(data []byte) ([]byte, bool) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out []byte
	last := 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, false
		}
		n, isNum := tok.(json.Number)
		if !isNum || !strings.ContainsAny(string(n), ".eE") {
			continue
		}
		f, err := jsonnum.ParseFloat(string(n))
		if err != nil || f != math.Trunc(f) || math.Abs(f) >= 1<<53 {
			continue
		}
		end := int(dec.InputOffset())
		start := end - len(n)
		if start < last || string(data[start:end]) != string(n) {
			return nil, false
		}
		out = append(out, data[last:start]...)
		out = strconv.AppendInt(out, int64(f), 10)
		last = end
	}
	if out == nil {
		return nil, false
	}
	return append(out, data[last:]...), true
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
