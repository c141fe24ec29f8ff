package offlineschema

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
	"github.com/ampbundle/ampbundle/internal/jsonnum"
	"github.com/ampbundle/ampbundle/internal/limit"
	"github.com/ampbundle/ampbundle/internal/schemagraph"
)

// Limits of the JSON data model of this package.
const (
	// MaxDepth caps the nesting of arrays and objects in a value.
	MaxDepth = 64
	// MaxJSONSize caps the input of ValueFromJSON in bytes (the default
	// AMP message size cap).
	MaxJSONSize = amp.DefaultMaxMessageSize
	// maxNumberLen caps a JSON number literal, and maxExponent its decimal
	// exponent: the library compares numbers as math/big rationals built
	// from their text, whose cost grows with both.
	maxNumberLen = 100
	maxExponent  = 400
)

// ErrLimitExceeded: a value is nested deeper than MaxDepth (1001 from
// ValueFromCBOR, like amp's own depth cap; code 0 from ValueFromJSON and
// ToCBOR), or holds more items than its budget (1001 from
// ValueFromCBORBudget and ValueFromJSONBudget).
const ErrLimitExceeded amp.ErrName = "limit_exceeded"

// negMinUint64 is -2^64, the smallest CBOR integer (major type 1 with
// argument 2^64-1), which no Go integer type holds.
const negMinUint64 = "-18446744073709551616"

// ValueFromCBOR converts one CBOR data item (already validated by the
// caller with amp.Limits.Canonical) into the JSON data model that Validate
// takes:
//
//	map with text keys -> map[string]any     array -> []any
//	text string        -> string             true/false -> bool, null -> nil
//	unsigned integer   -> int64, or uint64 above math.MaxInt64
//	negative integer   -> int64, or json.Number below math.MinInt64 (exact)
//	float16/32/64      -> float64 (NaN and ±Inf refused)
//
// Byte strings, tags, undefined, other simple values and non-text map keys
// are refused with 4004 not_json_compatible; the message gives the JSON
// pointer of the value only. Nesting deeper than MaxDepth is 1001
// limit_exceeded. Bytes that are not exactly one well-formed item
// (truncated, indefinite length, invalid UTF-8, duplicate key, trailing
// bytes) are 1001 invalid_message: the caller should have refused them.
func ValueFromCBOR(item []byte) (any, error) {
	return ValueFromCBORBudget(item, 0)
}

// DefaultMaxItems is the item budget of ValueFromCBORBudget when none is
// given: every array element, map value and scalar counts one.
const DefaultMaxItems = 1 << 18

// ValueFromCBORBudget is ValueFromCBOR with a total item budget (maxItems
// <= 0: DefaultMaxItems): a value of more items, in all its arrays and maps
// together, is refused with 1001 limit_exceeded before it is expanded
// further. Per-array caps alone let 250 arrays of 65,536 zeros (16 MiB)
// expand into 16 million values.
func ValueFromCBORBudget(item []byte, maxItems int) (any, error) {
	limit.Default(&maxItems, DefaultMaxItems)
	r := cborReader{data: item, budget: maxItems}
	v, err := r.value(0)
	if err != nil {
		return nil, err
	}
	if r.off != len(item) {
		return nil, malformed("trailing bytes after the item")
	}
	return v, nil
}

// tooManyItems is the refusal of a value over its item budget
// (ValueFromCBORBudget, ValueFromJSONBudget): 1001 limit_exceeded, the
// AMP binding's error, whichever encoding the value came in.
func tooManyItems() *amp.Error {
	return amp.Named(amp.CodeInvalidMessage, ErrLimitExceeded, "value has more items than this agent accepts")
}

func malformed(what string) *amp.Error {
	return amp.NewError(amp.CodeInvalidMessage, "cbor item is malformed: %s", what)
}

func tooDeep(code amp.Code, p path) *amp.Error {
	return amp.Named(code, ErrLimitExceeded, "value at %s is nested deeper than %d", quotePointer(p.pointer()), MaxDepth)
}

type cborReader struct {
	data   []byte
	off    int
	path   path
	budget int // items left
}

// head reads the head of the next item with amp's strict reader
// (indefinite lengths, reserved additional information and ill-formed
// simple values are refused).
func (r *cborReader) head() (major, info byte, arg uint64, err error) {
	h, herr := amp.ReadHead(r.data, r.off)
	if herr != nil {
		what := "refused head"
		var ae *amp.Error
		if errors.As(herr, &ae) {
			what = ae.Message
		}
		return 0, 0, 0, malformed(what)
	}
	r.off += h.Size
	return h.Major, h.Info, h.Arg, nil
}

// text reads the bytes of a text string of length n.
func (r *cborReader) text(n uint64) (string, error) {
	if n > uint64(len(r.data)-r.off) {
		return "", malformed("truncated")
	}
	b := r.data[r.off : r.off+int(n)]
	if !utf8.Valid(b) {
		return "", malformed("text string is not utf-8")
	}
	r.off += int(n)
	return string(b), nil
}

// value reads the next item, depth levels down, into the JSON data model
// (ValueFromCBOR), each item charged to the budget before it is read
// further: integers (number), text, arrays (array), maps (object), the
// simple values and floats (simple); the rest is not JSON.
func (r *cborReader) value(depth int) (any, error) {
	major, info, arg, err := r.head()
	if err != nil {
		return nil, err
	}
	if r.budget--; r.budget < 0 {
		return nil, tooManyItems()
	}
	switch major {
	case 0, 1:
		return number(major, arg), nil
	case 2:
		return nil, notCompatible(amp.CodeSchemaViolation, r.path, "byte string")
	case 3:
		return r.text(arg)
	case 4:
		return r.array(depth, arg)
	case 5:
		return r.object(depth, arg)
	case 6:
		return nil, notCompatible(amp.CodeSchemaViolation, r.path, "tagged item")
	}
	return r.simple(info, arg)
}

// number is the integer of major type 0 (unsigned) or 1 (negative) and
// argument arg: an int64 where one holds it, else a uint64 or, below
// math.MinInt64, an exact json.Number.
func number(major byte, arg uint64) any {
	if major == 0 {
		if arg <= math.MaxInt64 {
			return int64(arg)
		}
		return arg
	}
	if arg <= math.MaxInt64 {
		return -1 - int64(arg)
	}
	if arg == math.MaxUint64 {
		return json.Number(negMinUint64)
	}
	return json.Number("-" + strconv.FormatUint(arg+1, 10))
}

// array reads the n elements of an array at depth, after checking that
// the nesting, the bytes left (every element takes one) and the budget
// allow them, before anything is allocated.
func (r *cborReader) array(depth int, n uint64) (any, error) {
	if depth >= MaxDepth {
		return nil, tooDeep(amp.CodeInvalidMessage, r.path)
	}
	if n > uint64(len(r.data)-r.off) { // every element takes a byte
		return nil, malformed("truncated")
	}
	if n > uint64(r.budget) {
		return nil, tooManyItems()
	}
	arr := make([]any, n)
	for i := range arr {
		r.path = append(r.path, segment{index: i})
		var err error
		if arr[i], err = r.value(depth + 1); err != nil {
			return nil, err
		}
		r.path = r.path[:len(r.path)-1]
	}
	return arr, nil
}

// object reads the n entries of a map at depth, each key text and met
// once, after checking that the nesting, the bytes left (every entry
// takes two) and the budget allow them.
func (r *cborReader) object(depth int, n uint64) (any, error) {
	if depth >= MaxDepth {
		return nil, tooDeep(amp.CodeInvalidMessage, r.path)
	}
	if n > uint64(len(r.data)-r.off)/2 {
		return nil, malformed("truncated")
	}
	if n > uint64(r.budget) {
		return nil, tooManyItems()
	}
	m := make(map[string]any, n)
	for i := uint64(0); i < n; i++ {
		kmajor, _, klen, err := r.head()
		if err != nil {
			return nil, err
		}
		if kmajor != 3 {
			return nil, notCompatible(amp.CodeSchemaViolation, r.path, "map with a key that is not text")
		}
		key, err := r.text(klen)
		if err != nil {
			return nil, err
		}
		r.path = append(r.path, segment{key: key, index: -1})
		v, err := r.value(depth + 1)
		if err != nil {
			return nil, err
		}
		r.path = r.path[:len(r.path)-1]
		m[key] = v
		if uint64(len(m)) != i+1 {
			return nil, malformed("duplicate map key")
		}
	}
	return m, nil
}

// simple is the item of major type 7 with additional information info
// and argument arg: false, true, null, or a finite float; undefined, the
// other simple values, NaN and the infinities are not JSON.
func (r *cborReader) simple(info byte, arg uint64) (any, error) {
	var f float64
	switch info {
	case 20:
		return false, nil
	case 21:
		return true, nil
	case 22:
		return nil, nil
	case 23:
		return nil, notCompatible(amp.CodeSchemaViolation, r.path, "undefined")
	case 25:
		f = halfToFloat64(uint16(arg))
	case 26:
		f = float64(math.Float32frombits(uint32(arg)))
	case 27:
		f = math.Float64frombits(arg)
	default:
		return nil, notCompatible(amp.CodeSchemaViolation, r.path, "simple value")
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, notCompatible(amp.CodeSchemaViolation, r.path, "nan or infinite float")
	}
	return f, nil
}

// halfToFloat64 converts IEEE 754 binary16 bits to a float64.
func halfToFloat64(h uint16) float64 {
	exp := int(h>>10) & 0x1f
	mant := float64(h & 0x3ff)
	var f float64
	switch exp {
	case 0:
		f = math.Ldexp(mant, -24)
	case 0x1f:
		if mant == 0 {
			f = math.Inf(1)
		} else {
			f = math.NaN()
		}
	default:
		f = math.Ldexp(mant+1024, exp-25)
	}
	if h&0x8000 != 0 {
		f = -f
	}
	return f
}

// numberInModel reports whether a JSON number literal is in the model:
// an integer literal in the CBOR integer range [-2^64, 2^64-1], or any
// other literal that is a finite float64 once rounded (internal/jsonnum,
// the module's one rounding of a number a peer wrote), at most
// maxNumberLen bytes long with a decimal exponent within ±maxExponent.
func numberInModel(s string) bool {
	if len(s) > maxNumberLen || !schemagraph.NumberSyntax(s) {
		return false
	}
	if !strings.ContainsAny(s, ".eE") {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return true
		}
		if _, err := strconv.ParseUint(strings.TrimPrefix(s, "-"), 10, 64); err == nil {
			return true
		}
		return s == negMinUint64
	}
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		e, err := strconv.Atoi(s[i+1:])
		if err != nil || e > maxExponent || e < -maxExponent {
			return false
		}
	}
	_, err := jsonnum.ParseFloat(s) // exact and linear: docs/SPEC-DECISIONS.md JSON-3
	return err == nil
}

// ValueFromJSON decodes JSON bytes into the same model as ValueFromCBOR,
// with numbers as json.Number (exact). It is strict: exactly one value, no
// trailing data, UTF-8 only, no \u escape of a lone UTF-16 surrogate (a
// CBOR text string cannot hold one; encoding/json would read U+FFFD:
// docs/SPEC-DECISIONS.md JSON-1), no duplicate object keys, at most
// MaxJSONSize bytes (all invalid_json, code 0); numbers outside the model
// (see ValueFromCBOR: beyond the CBOR integer range or float64, or
// unreasonably long) are 4004 not_json_compatible; nesting deeper than
// MaxDepth is limit_exceeded (code 0).
func ValueFromJSON(data []byte) (any, error) {
	if len(data) > MaxJSONSize {
		return nil, tooLarge(data)
	}
	return valueFromJSON(data, MaxJSONSize+1) // a byte per value at least
}

// ValueFromJSONBudget is ValueFromJSON with the item budget of
// ValueFromCBORBudget (maxItems <= 0: DefaultMaxItems): the values of the
// text are counted as the agent's item budget counts the items of CBOR
// params (every scalar, array and object one, member names none), in one
// pass over the bytes that allocates nothing, and a text of more is
// refused with ValueFromCBORBudget's error (1001 limit_exceeded; nesting
// deeper than MaxDepth stays code 0) before any tree is built. The parse
// that follows stops at maxItems values too, so a text the count misjudges
// (one that is not JSON) builds no tree beyond the budget either.
func ValueFromJSONBudget(data []byte, maxItems int) (any, error) {
	limit.Default(&maxItems, DefaultMaxItems)
	if len(data) > MaxJSONSize {
		return nil, tooLarge(data)
	}
	if jsonItems(data) > maxItems {
		return nil, tooManyItems()
	}
	return valueFromJSON(data, maxItems)
}

// jsonItems counts the values of the JSON text data as the item budget
// counts them: every array and object, every string that is not a member
// name (a string followed by ':', whitespace aside) and every number or
// literal one. It walks the bytes once and allocates nothing. For a JSON
// text the count is exact; for another it may be off either way, and the
// parse, which refuses that text, stops at the budget all the same.
func jsonItems(data []byte) int {
	n := 0
	scalar := false // inside a number or a literal
	name := false   // a string closed, only whitespace since
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			scalar = false
			continue
		case '{', '[':
			n++
		case '"':
			n++ // taken back at its ':' if it is a member name
			for i++; i < len(data) && data[i] != '"'; i++ {
				if data[i] == '\\' {
					i++ // the escaped byte, a quote included
				}
			}
			scalar, name = false, true
			continue
		case ':':
			if name {
				n--
			}
		case '}', ']', ',':
		default:
			if !scalar {
				n++
			}
			scalar, name = true, false
			continue
		}
		scalar, name = false, false
	}
	return n
}

// tooLarge is the refusal of JSON input over MaxJSONSize.
func tooLarge(data []byte) *amp.Error {
	return amp.Named(0, ErrInvalidJSON, "json input of %d bytes is over the %d-byte limit", len(data), MaxJSONSize)
}

// valueFromJSON is ValueFromJSON of data (at most MaxJSONSize bytes),
// its parse stopped past maxNodes values (tooManyItems).
func valueFromJSON(data []byte, maxNodes int) (any, error) {
	if !jcs.ExactStrings(data) {
		// encoding/json would read U+FFFD: two texts, one value.
		return nil, amp.Named(0, ErrInvalidJSON, "json input is not utf-8 or holds a lone surrogate escape")
	}
	v, err := schemagraph.Parse(data, schemagraph.Options{MaxBytes: MaxJSONSize, MaxDepth: MaxDepth, MaxNodes: maxNodes, Number: numberInModel})
	var e *schemagraph.Error
	if !errors.As(err, &e) {
		return v, err
	}
	switch e.Kind {
	case schemagraph.KindTooManyNodes:
		return nil, tooManyItems()
	case schemagraph.KindEmpty:
		return nil, amp.Named(0, ErrInvalidJSON, "json input is empty or truncated")
	case schemagraph.KindTrailing:
		return nil, amp.Named(0, ErrInvalidJSON, "trailing data after the json value").WithCause(e.Cause)
	case schemagraph.KindDuplicate:
		return nil, amp.Named(0, ErrInvalidJSON, "duplicate object key at %s", quotePointer(e.Pointer))
	case schemagraph.KindTooDeep:
		return nil, amp.Named(0, ErrLimitExceeded, "value at %s is nested deeper than %d", quotePointer(e.Pointer), MaxDepth)
	case schemagraph.KindNumber:
		return nil, notCompatibleAt(amp.CodeSchemaViolation, e.Pointer, "number out of range")
	}
	return nil, amp.Named(0, ErrInvalidJSON, "json input is not valid json").WithCause(e.Cause)
}

// ToCBOR converts a JSON-model value back to deterministic CBOR (amp.Marshal):
// the values ValueFromCBOR and ValueFromJSON produce, plus any Go integer
// and float32. A json.Number that is an integer literal becomes a CBOR
// integer (it must be in [-2^64, 2^64-1]); any other number becomes a
// float, which must be finite. Anything else (byte slices, structs, typed
// maps and slices, invalid UTF-8, nesting deeper than MaxDepth) is refused
// with code 0 (not_json_compatible, limit_exceeded): the value is the
// program's, not a peer's.
//
// For every item ValueFromCBOR accepts, ToCBOR of its value equals the
// item's deterministic encoding.
func ToCBOR(v any) ([]byte, error) {
	var p path
	x, err := toCBORModel(v, 0, &p)
	if err != nil {
		return nil, err
	}
	return amp.Marshal(x)
}

func toCBORModel(v any, depth int, p *path) (any, error) {
	switch x := v.(type) {
	case nil, bool:
		return x, nil
	case string:
		if !utf8.ValidString(x) {
			return nil, notCompatible(0, *p, "text that is not utf-8")
		}
		return x, nil
	case int:
		return int64(x), nil
	case int8:
		return int64(x), nil
	case int16:
		return int64(x), nil
	case int32:
		return int64(x), nil
	case int64:
		return x, nil
	case uint:
		return uint64(x), nil
	case uint8:
		return uint64(x), nil
	case uint16:
		return uint64(x), nil
	case uint32:
		return uint64(x), nil
	case uint64:
		return x, nil
	case float32:
		return finite(float64(x), *p)
	case float64:
		return finite(x, *p)
	case json.Number:
		return numberToCBOR(string(x), *p)
	case []any:
		if depth >= MaxDepth {
			return nil, tooDeep(0, *p)
		}
		out := make([]any, len(x))
		for i, e := range x {
			*p = append(*p, segment{index: i})
			y, err := toCBORModel(e, depth+1, p)
			if err != nil {
				return nil, err
			}
			*p = (*p)[:len(*p)-1]
			out[i] = y
		}
		return out, nil
	case map[string]any:
		if depth >= MaxDepth {
			return nil, tooDeep(0, *p)
		}
		out := make(map[string]any, len(x))
		for k, e := range x {
			*p = append(*p, segment{key: k, index: -1})
			if !utf8.ValidString(k) {
				return nil, notCompatible(0, *p, "key that is not utf-8")
			}
			y, err := toCBORModel(e, depth+1, p)
			if err != nil {
				return nil, err
			}
			*p = (*p)[:len(*p)-1]
			out[k] = y
		}
		return out, nil
	}
	return nil, notCompatible(0, *p, fmt.Sprintf("value of go type %T", v))
}

func finite(f float64, p path) (any, error) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, notCompatible(0, p, "nan or infinite float")
	}
	return f, nil
}

func numberToCBOR(s string, p path) (any, error) {
	if !numberInModel(s) {
		return nil, notCompatible(0, p, "number out of range")
	}
	if !strings.ContainsAny(s, ".eE") {
		if i, err := strconv.ParseInt(s, 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(s, 10, 64); err == nil {
			return u, nil
		}
		b, _ := new(big.Int).SetString(s, 10) // in [-2^64, -2^63-1]
		return b, nil
	}
	f, _ := jsonnum.ParseFloat(s)
	return f, nil
}
