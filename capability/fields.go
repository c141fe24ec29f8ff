package capability

import (
	"bytes"
	"maps"
	"slices"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

// Decoding of CBOR maps with text keys, field by field. RFC 004 §9: bytes
// that are not valid CBOR are 1001, and amp decides that: every body goes
// through amp.Limits.Canonical first, which refuses malformed items,
// indefinite lengths, duplicate keys, invalid UTF-8, trailing bytes and
// anything over amp's caps, and returns the deterministic encoding. A
// well-formed body with a missing field or a field of the wrong type is
// 4001, decided here.
//
// After that gate the bytes are known to be well-formed deterministic CBOR,
// so fields are read straight from them with amp's strict head reader (still
// bounds-checked) instead of a reflective decode per field. The buffer is
// copied once, so no decoded value aliases the caller's input, and raw
// values (params, result, details, Extra) are capacity-limited slices of
// that copy.
//
// Every object's known fields are taken out one by one; what remains is
// kept as the object's Extra (§10: new optional fields may be added) and
// re-encoded as-is.

// CBOR major types.
const (
	majorUint  = amp.MajorUint
	majorBytes = amp.MajorBytes
	majorText  = amp.MajorText
	majorArray = amp.MajorArray
	majorMap   = amp.MajorMap
)

// canonicalBody checks that body is one accepted CBOR item (1001 otherwise)
// and returns its deterministic encoding in a buffer the caller owns.
func canonicalBody(body []byte) ([]byte, error) {
	return canonicalBodyLimits(amp.Limits{}, body)
}

// canonicalBodyLimits is canonicalBody under the caller's caps (zero
// fields are amp's defaults).
func canonicalBodyLimits(lim amp.Limits, body []byte) ([]byte, error) {
	canon, err := lim.Canonical(body)
	if err != nil {
		return nil, err
	}
	if len(canon) > 0 && len(body) > 0 && &canon[0] == &body[0] {
		canon = bytes.Clone(canon)
	}
	return canon, nil
}

// head reads the head of the item at b[off:] with amp's strict reader:
// major type, argument, and the offset after the head.
func head(b []byte, off int) (major byte, arg uint64, next int, ok bool) {
	h, err := amp.ReadHead(b, off)
	if err != nil {
		return 0, 0, 0, false // indefinite, reserved, truncated: refused by amp
	}
	return h.Major, h.Arg, off + h.Size, true
}

// skip returns the offset after the item at b[off:].
func skip(b []byte, off int) (int, bool) {
	next, err := amp.SkipItem(b, off)
	return next, err == nil
}

// malformed is the error for bytes the head reader cannot follow. amp's
// gate makes it unreachable; it exists so that nothing can panic.
func malformed() error {
	return amp.Named(amp.CodeInvalidMessage, "malformed", "cbor item is malformed")
}

// items splits the array at raw into its items.
func items(raw []byte) ([][]byte, bool) {
	major, n, off, ok := head(raw, 0)
	if !ok || major != majorArray || n > uint64(len(raw)) {
		return nil, false
	}
	out := make([][]byte, 0, n)
	for i := uint64(0); i < n; i++ {
		end, ok := skip(raw, off)
		if !ok {
			return nil, false
		}
		out = append(out, raw[off:end:end])
		off = end
	}
	return out, true
}

// field is one entry of a map being taken apart.
type field struct {
	key   string
	val   []byte
	taken bool
}

// object is a CBOR map being taken apart.
type object struct {
	path   string
	fields []field
}

// decodeObject opens raw (deterministic CBOR from the gate) as a map with
// text keys. An empty path stands for the top-level object, named kind in
// messages.
func decodeObject(raw []byte, path, kind string) (*object, error) {
	name := path
	if name == "" {
		name = kind
	}
	major, n, off, ok := head(raw, 0)
	if !ok {
		return nil, malformed()
	}
	if major != majorMap {
		return nil, badRequest(ErrWrongType, "%s must be a map", name)
	}
	if n > uint64(len(raw)) {
		return nil, malformed()
	}
	o := &object{path: path, fields: make([]field, 0, n)}
	for i := uint64(0); i < n; i++ {
		km, kl, ks, ok := head(raw, off)
		if !ok {
			return nil, malformed()
		}
		if km != majorText {
			return nil, badRequest(ErrWrongType, "%s must be a map with text keys", name)
		}
		kEnd, ok := skip(raw, off)
		if !ok || kEnd-ks != int(kl) {
			return nil, malformed()
		}
		vEnd, ok := skip(raw, kEnd)
		if !ok {
			return nil, malformed()
		}
		o.fields = append(o.fields, field{key: string(raw[ks:kEnd]), val: raw[kEnd:vEnd:vEnd]})
		off = vEnd
	}
	return o, nil
}

func (o *object) take(key string) ([]byte, bool) {
	for i := range o.fields {
		if f := &o.fields[i]; !f.taken && f.key == key {
			f.taken = true
			return f.val, true
		}
	}
	return nil, false
}

// has reports whether key is present and not taken.
func (o *object) has(key string) bool {
	for _, f := range o.fields {
		if !f.taken && f.key == key {
			return true
		}
	}
	return false
}

func (o *object) missing(key string) error {
	return badRequest(ErrMissingField, "%s is required", fieldPath(o.path, key))
}

// textOf reads a text item; ok is false for any other type.
func textOf(raw []byte) (string, bool) {
	major, n, off, ok := head(raw, 0)
	if !ok || major != majorText || n != uint64(len(raw)-off) {
		return "", false
	}
	return string(raw[off:]), true
}

// text takes an optional text field. Present text must not be empty: an
// optional field is either absent or meaningful, which keeps one encoding
// per value.
func (o *object) text(key string) (string, bool, error) {
	raw, ok := o.take(key)
	if !ok {
		return "", false, nil
	}
	s, ok := textOf(raw)
	if !ok {
		return "", false, badRequest(ErrWrongType, "%s must be a text string", fieldPath(o.path, key))
	}
	if s == "" {
		return "", false, badRequest(ErrInvalidField, "%s must not be empty", fieldPath(o.path, key))
	}
	return s, true, nil
}

// requiredText takes a required text field.
func (o *object) requiredText(key string) (string, error) {
	s, ok, err := o.text(key)
	if err == nil && !ok {
		err = o.missing(key)
	}
	return s, err
}

// uint takes an optional unsigned integer field.
func (o *object) uint(key string) (*uint64, error) {
	raw, ok := o.take(key)
	if !ok {
		return nil, nil
	}
	major, n, next, ok := head(raw, 0)
	if !ok || major != majorUint || next != len(raw) {
		return nil, badRequest(ErrWrongType, "%s must be an unsigned integer", fieldPath(o.path, key))
	}
	return &n, nil
}

// bytes takes a required byte string field.
func (o *object) bytes(key string) ([]byte, error) {
	raw, ok := o.take(key)
	if !ok {
		return nil, o.missing(key)
	}
	major, n, off, ok := head(raw, 0)
	if !ok || major != majorBytes || n != uint64(len(raw)-off) {
		return nil, badRequest(ErrWrongType, "%s must be a byte string", fieldPath(o.path, key))
	}
	return raw[off:len(raw):len(raw)], nil
}

// array takes an optional array field and returns its items; ok reports
// presence (an empty array is present).
func (o *object) array(key string) (its [][]byte, ok bool, err error) {
	raw, ok := o.take(key)
	if !ok {
		return nil, false, nil
	}
	its, ok = items(raw)
	if !ok {
		return nil, false, badRequest(ErrWrongType, "%s must be an array", fieldPath(o.path, key))
	}
	return its, true, nil
}

// textItem decodes one array item as a text string; path names the item
// in an error.
func textItem(raw []byte, path func() string) (string, error) {
	s, ok := textOf(raw)
	if !ok {
		return "", badRequest(ErrWrongType, "%s must be a text string", path())
	}
	return s, nil
}

// raw takes an optional field of any type, kept as deterministic CBOR.
func (o *object) raw(key string) (cbor.RawMessage, bool) {
	r, ok := o.take(key)
	if !ok {
		return nil, false
	}
	return cbor.RawMessage(r), true
}

// sub takes an optional map field.
func (o *object) sub(key string) (*object, bool, error) {
	raw, ok := o.take(key)
	if !ok {
		return nil, false, nil
	}
	s, err := decodeObject(raw, fieldPath(o.path, key), key)
	return s, err == nil, err
}

// extra returns the fields nobody took, or nil.
func (o *object) extra() map[string]cbor.RawMessage {
	var m map[string]cbor.RawMessage
	for _, f := range o.fields {
		if f.taken {
			continue
		}
		if m == nil {
			m = map[string]cbor.RawMessage{}
		}
		m[f.key] = f.val
	}
	return m
}

// Encoding. A body is built as map[string]any holding strings, []byte,
// uint64, []string, nested map[string]any and cbor.RawMessage values, then
// encoded once by amp.Marshal (deterministic, RFC 8949 §4.2.1).

// putExtra copies extra fields into m, refusing a key that is a defined
// field of the object kind (present or not) and an empty raw value (it would
// encode as null and not survive a round trip).
func putExtra(m map[string]any, extra map[string]cbor.RawMessage, kind string) error {
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		if _, dup := m[k]; dup || isKnownField(kind, k) {
			return badRequest(ErrInvalidField, "%s: an extra field has the name of a defined field", kind)
		}
		if len(extra[k]) == 0 {
			return badRequest(ErrInvalidField, "%s: an extra field has an empty value", kind)
		}
		m[k] = extra[k]
	}
	return nil
}

// isKnownField reports whether key is a field the CDDL defines for the
// object kind, so that Extra can never shadow one.
func isKnownField(kind, key string) bool {
	switch kind {
	case "descriptor":
		switch key {
		case "id", "name", "version", "input_schema", "output_schema", "supported_ranges", "deprecated_ranges", "notes",
			"policy", "compat_claims", "bridge":
			return true
		}
	case "schema-ref":
		switch key {
		case "uri", "bundle_id", "artifact_key", "hash_alg", "hash", "media_type", "updated_at":
			return true
		}
	case "query":
		switch key {
		case "filter", "limit", "cursor", "order":
			return true
		}
	case "filter":
		switch key {
		case "capability", "type", "version":
			return true
		}
	case "declare":
		switch key {
		case "capabilities", "next_cursor":
			return true
		}
	case "invoke":
		switch key {
		case "id", "capability", "type", "version", "negotiate", "params", "timeout_ms":
			return true
		}
	case "negotiate":
		switch key {
		case "preferred", "acceptable", "range":
			return true
		}
	case "result":
		switch key {
		case "status", "result", "error":
			return true
		}
	case "error":
		switch key {
		case "code", "name", "message", "details":
			return true
		}
	}
	return false
}
