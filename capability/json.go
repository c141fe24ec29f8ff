package capability

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"io"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jsonnum"
	"github.com/fxamacker/cbor/v2"
)

// The JSON form of a descriptor (bundle source folders, CLI output) has the
// same fields as the CBOR form; the one difference is that a schema-ref's
// "hash" is a lowercase hex string. JSON is converted to CBOR and then
// decoded by DecodeDescriptor, so both forms obey exactly the same rules.
// Input that is not valid JSON (syntax, invalid UTF-8, duplicate object
// keys, trailing data, nesting deeper than maxJSONDepth) is 1001
// invalid_json, the JSON twin of amp's 1001 for bad CBOR; wrong or missing
// fields are 4001.

// maxJSONDepth caps JSON nesting, as amp caps CBOR nesting.
const maxJSONDepth = amp.DefaultMaxDepth

func invalidJSON(format string, args ...any) *amp.Error {
	return amp.Named(amp.CodeInvalidMessage, ErrInvalidJSON, format, args...)
}

// DecodeDescriptorJSON decodes one capability-descriptor from its JSON form
// and checks it like DecodeDescriptor. Extra fields are kept (converted to
// CBOR: integers stay integers, other numbers become floats).
func DecodeDescriptorJSON(data []byte) (Descriptor, error) {
	v, err := readJSON(data)
	if err != nil {
		return Descriptor{}, err
	}
	if m, ok := v.(map[string]any); ok {
		for _, key := range []string{"input_schema", "output_schema", "bridge"} {
			ref, ok := m[key].(map[string]any)
			if !ok {
				continue
			}
			h, present := ref["hash"]
			if !present {
				continue
			}
			s, ok := h.(string)
			if !ok {
				return Descriptor{}, badRequest(ErrWrongType, "%s.hash must be a lowercase hex string", key)
			}
			b, ok := lowerHex(s)
			if !ok {
				return Descriptor{}, badRequest(ErrInvalidField, "%s.hash must be a lowercase hex string", key)
			}
			ref["hash"] = b
		}
	}
	raw, err := amp.Marshal(v)
	if err != nil {
		return Descriptor{}, err
	}
	return decodeDescriptor(raw, "")
}

func lowerHex(s string) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		if c := s[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return nil, false
		}
	}
	b, err := hex.DecodeString(s)
	return b, err == nil
}

// UnmarshalJSON implements json.Unmarshaler with DecodeDescriptorJSON.
func (d *Descriptor) UnmarshalJSON(data []byte) error {
	dd, err := DecodeDescriptorJSON(data)
	if err != nil {
		return err
	}
	*d = dd
	return nil
}

// MarshalJSON returns the JSON form of d: compact, keys sorted, hashes as
// lowercase hex. It refuses a descriptor that fails
// Validate(ProfileDefault), and one whose Extra holds a value with no JSON
// form (a byte string, a tag, a non-text map key, NaN or an infinity).
func (d Descriptor) MarshalJSON() ([]byte, error) {
	m, err := d.cborMap("descriptor")
	if err != nil {
		return nil, err
	}
	out, err := jsonForm(m)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, amp.Wrap(amp.CodeInternalError, err, "cannot encode json")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// jsonForm converts the map built for CBOR into one encoding/json can
// write: byte strings are hashes (hex), raw CBOR values are converted.
func jsonForm(v any) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			y, err := jsonForm(x)
			if err != nil {
				return nil, err
			}
			out[k] = y
		}
		return out, nil
	case []byte:
		return hex.EncodeToString(t), nil
	case cbor.RawMessage:
		var x any
		if err := amp.Unmarshal(t, &x); err != nil {
			return nil, err
		}
		return cborToJSON(x)
	}
	return v, nil
}

// cborToJSON converts a value decoded by amp into a JSON-writable one.
func cborToJSON(v any) (any, error) {
	noForm := func() (any, error) {
		return nil, badRequest(ErrInvalidField, "descriptor has an extra field with no json form")
	}
	switch t := v.(type) {
	case nil, bool, string, uint64, int64:
		return t, nil
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return noForm()
		}
		s := strconv.FormatFloat(t, 'g', -1, 64)
		if !strings.ContainsAny(s, ".e") {
			s += ".0" // stays a float when read back
		}
		return json.Number(s), nil
	case *big.Int:
		return json.Number(t.String()), nil
	case []any:
		out := make([]any, len(t))
		for i, x := range t {
			y, err := cborToJSON(x)
			if err != nil {
				return nil, err
			}
			out[i] = y
		}
		return out, nil
	case map[any]any:
		out := make(map[string]any, len(t))
		for k, x := range t {
			ks, ok := k.(string)
			if !ok {
				return noForm()
			}
			y, err := cborToJSON(x)
			if err != nil {
				return nil, err
			}
			out[ks] = y
		}
		return out, nil
	}
	return noForm()
}

// checkJSONForm refuses, with 4001 invalid_field, an extra field whose
// value has no JSON form that DecodeDescriptorJSON reads back as the same
// CBOR (see jsonItem). depth is the JSON nesting of the object holding
// the fields: 0 for a descriptor, 1 for its schema-refs.
func checkJSONForm(extra map[string]cbor.RawMessage, path string, depth int) error {
	for _, v := range extra {
		if end, ok := jsonItem(v, 0, depth+1); !ok || end != len(v) {
			return badRequest(ErrInvalidField, "%s: an extra field has no json form", path)
		}
	}
	return nil
}

// jsonItem reports whether the CBOR item at b[off:], at JSON nesting
// depth, is one that MarshalJSON writes and DecodeDescriptorJSON reads
// back as the same deterministic CBOR, and returns the offset after it:
// null, true, false, an integer from -2^63 to 2^64-1, a finite float,
// UTF-8 text, and arrays and maps with text keys of those, no container
// at depth maxJSONDepth or deeper (the JSON reader's cap). Refused: byte
// strings, tags (bignums included), other simple values (undefined, which
// would come back as null), NaN and the infinities, integers below
// -2^63, other map keys. It reads heads only, and allocates nothing.
func jsonItem(b []byte, off, depth int) (int, bool) {
	h, err := amp.ReadHead(b, off)
	if err != nil {
		return 0, false
	}
	next := off + h.Size
	switch h.Major {
	case majorUint:
		return next, true
	case amp.MajorNegint:
		return next, h.Arg <= math.MaxInt64
	case majorText:
		if h.Arg > uint64(len(b)-next) {
			return 0, false
		}
		end := next + int(h.Arg)
		return end, utf8.Valid(b[next:end])
	case majorArray, majorMap:
		if depth >= maxJSONDepth || h.Arg > uint64(len(b)-next) {
			return 0, false
		}
		for i := uint64(0); i < h.Arg; i++ {
			ok := true
			if h.Major == majorMap {
				if k, err := amp.ReadHead(b, next); err != nil || k.Major != majorText {
					return 0, false
				}
				if next, ok = jsonItem(b, next, depth+1); !ok {
					return 0, false
				}
			}
			if next, ok = jsonItem(b, next, depth+1); !ok {
				return 0, false
			}
		}
		return next, true
	case amp.MajorSimple:
		return next, jsonSimple(h)
	}
	return 0, false // byte strings and tags
}

// jsonSimple reports whether a major type 7 head is false, true, null or a
// finite float.
func jsonSimple(h amp.Head) bool {
	switch h.Info {
	case 20, 21, 22: // false, true, null
		return true
	case 25:
		return h.Arg&0x7c00 != 0x7c00
	case 26:
		return h.Arg&0x7f800000 != 0x7f800000
	case 27:
		return h.Arg&0x7ff0000000000000 != 0x7ff0000000000000
	}
	return false
}

// readJSON parses one JSON value strictly into map[string]any, []any,
// string, bool, nil, int64, uint64 and float64 values.
func readJSON(data []byte) (any, error) {
	if !utf8.Valid(data) {
		return nil, invalidJSON("json input is not valid utf-8")
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	v, err := readJSONValue(dec, 0)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalidJSON("trailing data after json value")
	}
	return v, nil
}

func readJSONValue(dec *json.Decoder, depth int) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, invalidJSON("json input is not valid json")
	}
	switch t := tok.(type) {
	case json.Delim:
		if t != '{' && t != '[' {
			return nil, invalidJSON("json input is not valid json")
		}
		if depth >= maxJSONDepth {
			return nil, invalidJSON("json nesting is deeper than %d", maxJSONDepth)
		}
		if t == '[' {
			arr := []any{}
			for dec.More() {
				x, err := readJSONValue(dec, depth+1)
				if err != nil {
					return nil, err
				}
				arr = append(arr, x)
			}
			if _, err := dec.Token(); err != nil {
				return nil, invalidJSON("json input is not valid json")
			}
			return arr, nil
		}
		obj := map[string]any{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return nil, invalidJSON("json input is not valid json")
			}
			k, ok := kt.(string)
			if !ok {
				return nil, invalidJSON("json input is not valid json")
			}
			if _, dup := obj[k]; dup {
				return nil, invalidJSON("duplicate key in json object")
			}
			x, err := readJSONValue(dec, depth+1)
			if err != nil {
				return nil, err
			}
			obj[k] = x
		}
		if _, err := dec.Token(); err != nil {
			return nil, invalidJSON("json input is not valid json")
		}
		return obj, nil
	case json.Number:
		return jsonNumber(string(t))
	case string, bool, nil:
		return t, nil
	}
	return nil, invalidJSON("json input is not valid json")
}

// jsonNumber converts a JSON number: integers to int64/uint64, anything
// with a fraction or exponent to float64, read by jsonnum.ParseFloat
// (docs/SPEC-DECISIONS.md JSON-3): strconv rounds a subnormal or a long
// number near a rounding boundary a thousand times slower than a plain
// number, and misreads one of more than 800 digits before its point
// (AGH-20, AGH-21).
func jsonNumber(s string) (any, error) {
	if !strings.ContainsAny(s, ".eE") {
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u, nil
		}
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		return nil, badRequest(ErrInvalidField, "json integer is out of range")
	}
	f, err := jsonnum.ParseFloat(s)
	if err != nil {
		return nil, badRequest(ErrInvalidField, "json number is out of range")
	}
	return f, nil
}
