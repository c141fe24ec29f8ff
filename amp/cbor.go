package amp

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"reflect"
	"sort"
	"unicode/utf8"

	"github.com/fxamacker/cbor/v2"
)

// Limits caps what a decoder accepts. The zero value of a field means its
// default; DefaultLimits documents them. Every cap is checked against the
// header of an item before anything is read or allocated for it, so a
// hostile length header costs nothing.
type Limits struct {
	// MaxMessageSize caps a whole encoded message in bytes. Default 16 MiB
	// (the agent endpoint limit the RFC 002 draft recommends).
	MaxMessageSize int
	// MaxDepth caps the nesting of arrays, maps and tags. Default 32.
	MaxDepth int
	// MaxArrayLen caps the element count of one array. Default 65536.
	MaxArrayLen int
	// MaxMapPairs caps the pair count of one map. Default 65536.
	MaxMapPairs int
	// MaxStringLen caps one byte or text string in bytes. Default: the
	// message size cap.
	MaxStringLen int
	// MaxItems caps the data items of one CBOR item in all, every array
	// element, map key and value, tag content and scalar counted (default
	// 1,048,576): the per-array and per-map caps alone let a 16 MiB map of
	// 250 arrays hold 16 million items.
	MaxItems int
}

// Default caps.
const (
	DefaultMaxMessageSize = 16 << 20
	DefaultMaxDepth       = 32
	DefaultMaxArrayLen    = 1 << 16
	DefaultMaxMapPairs    = 1 << 16
	DefaultMaxItems       = 1 << 20
	// maxDepthCeiling bounds MaxDepth whatever the caller asks for, so the
	// recursive walk can never exhaust the stack.
	maxDepthCeiling = 1024
)

// DefaultLimits returns the default caps.
func DefaultLimits() Limits { return Limits{}.withDefaults() }

func (l Limits) withDefaults() Limits {
	if l.MaxMessageSize <= 0 {
		l.MaxMessageSize = DefaultMaxMessageSize
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	l.MaxDepth = min(l.MaxDepth, maxDepthCeiling)
	if l.MaxArrayLen <= 0 {
		l.MaxArrayLen = DefaultMaxArrayLen
	}
	if l.MaxMapPairs <= 0 {
		l.MaxMapPairs = DefaultMaxMapPairs
	}
	if l.MaxItems <= 0 {
		l.MaxItems = DefaultMaxItems
	}
	if l.MaxStringLen <= 0 || l.MaxStringLen > l.MaxMessageSize {
		l.MaxStringLen = l.MaxMessageSize
	}
	return l
}

// Canonical checks that data is exactly one well-formed CBOR data item that
// this project accepts, and returns its deterministic encoding (RFC 8949
// §4.2.1): shortest heads, shortest floats that keep the value, definite
// lengths, map keys sorted by their encoded bytes.
//
// Every tag, every integer, every float and every simple value is kept
// exactly; only encoding choices change (docs/SPEC-DECISIONS.md AMP-9). When data is already
// deterministic, Canonical returns data itself without copying.
//
// Refused with 1001 invalid_message: trailing bytes, truncation, indefinite
// lengths, duplicate map keys (compared in deterministic form), invalid
// UTF-8 in text strings, reserved or ill-formed simple values, and anything
// over the caps in l.
func (l Limits) Canonical(data []byte) ([]byte, error) {
	out, _, err := l.check(data, false)
	return out, err
}

// topPairs holds where the pairs of a top-level map are, as recorded by
// the scanner: for pair i, off[3i] is the start of its key, off[3i+1] the
// start of its value and off[3i+2] the end of its value. Only the first
// envelopeFields pairs fit; lost records that there were more.
type topPairs struct {
	off   [3 * envelopeFields]int
	n     int
	lost  bool
	isMap bool
}

// complete reports whether every pair of a top-level map was recorded.
func (t *topPairs) complete() bool { return t.isMap && !t.lost }

// check is Canonical; with record set it also returns where the pairs of a
// top-level map are. The offsets come from the same walk that checks the
// caps, so a caller that splits a message into its fields needs no second
// pass over it.
func (l Limits) check(data []byte, record bool) ([]byte, topPairs, error) {
	l = l.withDefaults()
	if len(data) > l.MaxMessageSize {
		return nil, topPairs{}, NewError(CodeInvalidMessage, "cbor item of %d bytes is over the %d-byte limit", len(data), l.MaxMessageSize)
	}
	if len(data) == 0 {
		return nil, topPairs{}, NewError(CodeInvalidMessage, "empty cbor input")
	}
	s := scanner{data: data, lim: l, canonical: true, record: record}
	if err := s.item(0); err != nil {
		return nil, topPairs{}, err
	}
	if s.off != len(data) {
		return nil, topPairs{}, NewError(CodeInvalidMessage, "%d trailing bytes after cbor item", len(data)-s.off)
	}
	if s.canonical {
		return data, s.top, nil
	}
	out, _, err := canonicalize(nil, data, 0)
	if err != nil {
		return nil, topPairs{}, err
	}
	return out, s.top, nil
}

// IsCanonical reports whether data is a single accepted CBOR item already in
// deterministic encoding.
func (l Limits) IsCanonical(data []byte) bool {
	out, err := l.Canonical(data)
	return err == nil && len(out) == len(data) && (len(out) == 0 || &out[0] == &data[0])
}

// scanner walks one data item, enforcing the caps, and records whether the
// encoding is already deterministic. It never allocates.
type scanner struct {
	data      []byte
	off       int
	lim       Limits
	canonical bool
	items     int
	// record asks for the offsets of a top-level map's pairs in top.
	record bool
	top    topPairs
}

func (s *scanner) item(depth int) error {
	h, err := ReadHead(s.data, s.off)
	if err != nil {
		return err
	}
	if s.items++; s.items > s.lim.MaxItems {
		return Named(CodeInvalidMessage, "limit_exceeded", "cbor item holds more than %d items", s.lim.MaxItems)
	}
	start := s.off
	s.off += h.Size
	if !h.Minimal {
		s.canonical = false
	}
	// Arrays, maps and tags (majors 4 to 6) nest.
	if depth >= s.lim.MaxDepth && h.Major >= MajorArray && h.Major <= MajorTag {
		return Named(CodeInvalidMessage, "limit_exceeded", "cbor nesting is deeper than %d", s.lim.MaxDepth)
	}
	switch h.Major {
	case MajorUint, MajorNegint:
		return nil
	case MajorBytes, MajorText:
		if h.Arg > uint64(s.lim.MaxStringLen) {
			return Named(CodeInvalidMessage, "limit_exceeded", "cbor string of %d bytes is over the %d-byte limit", h.Arg, s.lim.MaxStringLen)
		}
		if h.Arg > uint64(len(s.data)-s.off) {
			return errTruncated()
		}
		n := int(h.Arg)
		if h.Major == MajorText && !utf8.Valid(s.data[s.off:s.off+n]) {
			return Named(CodeInvalidMessage, "invalid_utf8", "cbor text string is not valid utf-8")
		}
		s.off += n
		return nil
	case MajorArray:
		if h.Arg > uint64(s.lim.MaxArrayLen) {
			return Named(CodeInvalidMessage, "limit_exceeded", "cbor array of %d items is over the %d-item limit", h.Arg, s.lim.MaxArrayLen)
		}
		// Every element takes at least one byte.
		if h.Arg > uint64(len(s.data)-s.off) {
			return errTruncated()
		}
		for i := uint64(0); i < h.Arg; i++ {
			if err := s.item(depth + 1); err != nil {
				return err
			}
		}
		return nil
	case MajorMap:
		if h.Arg > uint64(s.lim.MaxMapPairs) {
			return Named(CodeInvalidMessage, "limit_exceeded", "cbor map of %d pairs is over the %d-pair limit", h.Arg, s.lim.MaxMapPairs)
		}
		if h.Arg > uint64(len(s.data)-s.off)/2 {
			return errTruncated()
		}
		record := depth == 0 && s.record
		if record {
			s.top.isMap = true
		}
		var prevKey []byte
		for i := uint64(0); i < h.Arg; i++ {
			ks := s.off
			if err := s.item(depth + 1); err != nil {
				return err
			}
			key := s.data[ks:s.off]
			vs := s.off
			// In a deterministic map the encoded keys are strictly
			// increasing, which also rules out duplicates. Anything else
			// is left to canonicalize, which compares keys in their
			// deterministic form.
			if prevKey != nil && bytes.Compare(prevKey, key) >= 0 {
				s.canonical = false
			}
			prevKey = key
			if err := s.item(depth + 1); err != nil {
				return err
			}
			if record {
				if t := &s.top; t.n < envelopeFields {
					t.off[3*t.n], t.off[3*t.n+1], t.off[3*t.n+2] = ks, vs, s.off
					t.n++
				} else {
					t.lost = true
				}
			}
		}
		return nil
	case MajorTag:
		return s.item(depth + 1)
	default: // majorSimple
		switch h.Info {
		case 25, 26, 27:
			if !floatIsShortest(s.data[start : start+h.Size]) {
				s.canonical = false
			}
		}
		return nil
	}
}

// canonicalize appends the deterministic encoding of the item at data[off:]
// to dst and returns the new dst and the offset after the item. The input
// must have passed the scanner.
func canonicalize(dst, data []byte, off int) ([]byte, int, error) {
	h, err := ReadHead(data, off)
	if err != nil {
		return nil, 0, err
	}
	start := off
	off += h.Size
	switch h.Major {
	case MajorUint, MajorNegint:
		return AppendHead(dst, h.Major, h.Arg), off, nil
	case MajorBytes, MajorText:
		n := int(h.Arg)
		dst = AppendHead(dst, h.Major, h.Arg)
		return append(dst, data[off:off+n]...), off + n, nil
	case MajorArray:
		dst = AppendHead(dst, MajorArray, h.Arg)
		for i := uint64(0); i < h.Arg; i++ {
			if dst, off, err = canonicalize(dst, data, off); err != nil {
				return nil, 0, err
			}
		}
		return dst, off, nil
	case MajorMap:
		type pair struct{ k, v []byte }
		pairs := make([]pair, h.Arg)
		for i := range pairs {
			var k, v []byte
			if k, off, err = canonicalize(nil, data, off); err != nil {
				return nil, 0, err
			}
			if v, off, err = canonicalize(nil, data, off); err != nil {
				return nil, 0, err
			}
			pairs[i] = pair{k, v}
		}
		sort.Slice(pairs, func(i, j int) bool { return bytes.Compare(pairs[i].k, pairs[j].k) < 0 })
		for i := 1; i < len(pairs); i++ {
			if bytes.Equal(pairs[i-1].k, pairs[i].k) {
				return nil, 0, Named(CodeInvalidMessage, "duplicate_map_key", "duplicate key in cbor map")
			}
		}
		dst = AppendHead(dst, MajorMap, h.Arg)
		for _, p := range pairs {
			dst = append(append(dst, p.k...), p.v...)
		}
		return dst, off, nil
	case MajorTag:
		dst = AppendHead(dst, MajorTag, h.Arg)
		return canonicalize(dst, data, off)
	default:
		switch h.Info {
		case 25, 26, 27:
			return appendShortestFloat(dst, data[start:off]), off, nil
		}
		return append(dst, data[start:off]...), off, nil
	}
}

// Float handling. A float is in deterministic form when no shorter IEEE 754
// format represents exactly the same value (RFC 8949 §4.2.1). NaN payloads
// and signs are kept: a NaN shrinks only when its payload survives intact.

// f16Bits returns the binary16 encoding of the binary32 value with bits b,
// and whether it represents exactly the same value.
func f16Bits(b uint32) (uint16, bool) {
	sign := uint16(b>>16) & 0x8000
	exp := int32(b>>23) & 0xff
	mant := b & 0x7fffff
	switch {
	case exp == 0xff: // Inf or NaN: keep the payload's top 10 bits
		if mant&0x1fff != 0 {
			return 0, false
		}
		return sign | 0x7c00 | uint16(mant>>13), true
	case exp == 0 && mant == 0: // ±0
		return sign, true
	case exp == 0: // binary32 subnormal: far below binary16's range
		return 0, false
	}
	e := exp - 127 // unbiased
	switch {
	case e >= -14 && e <= 15: // binary16 normal
		if mant&0x1fff != 0 {
			return 0, false
		}
		return sign | uint16(e+15)<<10 | uint16(mant>>13), true
	case e >= -24 && e < -14: // binary16 subnormal
		full := mant | 0x800000 // implicit bit
		shift := uint32(-e - 14 + 13)
		if full&(1<<shift-1) != 0 {
			return 0, false
		}
		return sign | uint16(full>>shift), true
	}
	return 0, false
}

// f32Bits returns the binary32 encoding of the binary64 value with bits b,
// and whether it represents exactly the same value.
func f32Bits(b uint64) (uint32, bool) {
	sign := uint32(b>>32) & 0x80000000
	exp := int64(b>>52) & 0x7ff
	mant := b & 0xfffffffffffff
	switch {
	case exp == 0x7ff:
		if mant&0x1fffffff != 0 {
			return 0, false
		}
		return sign | 0x7f800000 | uint32(mant>>29), true
	case exp == 0 && mant == 0:
		return sign, true
	case exp == 0:
		return 0, false
	}
	e := exp - 1023
	switch {
	case e >= -126 && e <= 127:
		if mant&0x1fffffff != 0 {
			return 0, false
		}
		return sign | uint32(e+127)<<23 | uint32(mant>>29), true
	case e >= -149 && e < -126:
		full := mant | 1<<52
		shift := uint64(-e - 126 + 29)
		if full&(1<<shift-1) != 0 {
			return 0, false
		}
		return sign | uint32(full>>shift), true
	}
	return 0, false
}

// floatIsShortest reports whether the float item enc (head included) is in
// its shortest exact form.
func floatIsShortest(enc []byte) bool {
	switch len(enc) {
	case 3:
		return true
	case 5:
		_, ok := f16Bits(binary.BigEndian.Uint32(enc[1:]))
		return !ok
	default:
		_, ok := f32Bits(binary.BigEndian.Uint64(enc[1:]))
		return !ok
	}
}

// appendShortestFloat appends the shortest exact encoding of the float item
// enc (head included).
func appendShortestFloat(dst, enc []byte) []byte {
	switch len(enc) {
	case 5:
		b32 := binary.BigEndian.Uint32(enc[1:])
		if b16, ok := f16Bits(b32); ok {
			return append(dst, 0xf9, byte(b16>>8), byte(b16))
		}
		return append(dst, enc...)
	case 9:
		b32, ok := f32Bits(binary.BigEndian.Uint64(enc[1:]))
		if !ok {
			return append(dst, enc...)
		}
		if b16, ok := f16Bits(b32); ok {
			return append(dst, 0xf9, byte(b16>>8), byte(b16))
		}
		return append(dst, 0xfa, byte(b32>>24), byte(b32>>16), byte(b32>>8), byte(b32))
	}
	return append(dst, enc...)
}

// Codec modes, built once. They are immutable and safe for concurrent use.

var encMode = mustEncMode()

var decMode = mustDecMode()

func mustEncMode() cbor.EncMode {
	opts := cbor.CoreDetEncOptions()
	// Keep NaN payloads and infinities exact; Canonical shortens them.
	opts.NaNConvert = cbor.NaNConvertPreserveSignal
	opts.InfConvert = cbor.InfConvertNone
	opts.ShortestFloat = cbor.ShortestFloatNone
	// nil slices and maps are CBOR null; callers that want an empty byte
	// string or map must pass a non-nil empty value.
	m, err := opts.EncMode()
	if err != nil {
		panic("amp: cbor encoder options: " + err.Error())
	}
	return m
}

func mustDecMode() cbor.DecMode {
	m, err := cbor.DecOptions{
		DupMapKey:         cbor.DupMapKeyEnforcedAPF,
		IndefLength:       cbor.IndefLengthForbidden,
		MaxNestedLevels:   maxDepthCeiling,
		MaxArrayElements:  math.MaxInt32,
		MaxMapPairs:       math.MaxInt32,
		UTF8:              cbor.UTF8RejectInvalid,
		ExtraReturnErrors: cbor.ExtraDecErrorNone,
		DefaultMapType:    reflect.TypeOf(map[any]any(nil)),
		IntDec:            cbor.IntDecConvertNone,
		FieldNameMatching: cbor.FieldNameMatchingCaseSensitive,
		BigIntDec:         cbor.BigIntDecodePointer,
	}.DecMode()
	if err != nil {
		panic("amp: cbor decoder options: " + err.Error())
	}
	return m
}

// Marshal returns the deterministic CBOR encoding of v (RFC 8949 §4.2.1).
// Struct fields use their `cbor` tags; cbor.RawMessage values are embedded
// and canonicalized too, so the result is deterministic whatever v holds.
func Marshal(v any) ([]byte, error) {
	b, err := encMode.Marshal(v)
	if err != nil {
		return nil, Wrap(CodeInternalError, err, "cannot encode cbor")
	}
	// The encoder sorts keys and shortens heads; Canonical also shortens
	// floats exactly and normalizes any embedded raw values.
	return Limits{MaxMessageSize: math.MaxInt32, MaxDepth: maxDepthCeiling, MaxArrayLen: math.MaxInt32, MaxMapPairs: math.MaxInt32}.Canonical(b)
}

// Unmarshal decodes the single CBOR data item in data into v after checking
// it against l (see Canonical for what is refused). Malformed input is 1001
// invalid_message; a well-formed item of the wrong shape for v is 1001
// wrong_shape. Callers that map shape errors to another code (RFC 004 uses
// 4001) check the name.
func (l Limits) Unmarshal(data []byte, v any) error {
	if _, err := l.Canonical(data); err != nil {
		return err
	}
	if err := decMode.Unmarshal(data, v); err != nil {
		// A nested unmarshaler that already classified its error (RFC 004
		// bodies use 4001) keeps its code and name.
		var inner *Error
		if errors.As(err, &inner) {
			return inner
		}
		return Named(CodeInvalidMessage, "wrong_shape", "cbor item does not have the expected shape").WithCause(err)
	}
	return nil
}

// Unmarshal is DefaultLimits().Unmarshal.
func Unmarshal(data []byte, v any) error { return Limits{}.Unmarshal(data, v) }
