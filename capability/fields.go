package capability

import (
	"errors"
	"sort"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/fxamacker/cbor/v2"
)

// Decoding of CBOR maps with text keys, field by field. RFC 004 §9: bytes
// that are not valid CBOR are 1001 (amp's strict decoder decides); a
// well-formed body with a missing field or a field of the wrong type is 4001.
//
// Every object is decoded into map[string]cbor.RawMessage first; the known
// fields are taken out of it one by one, and what remains is kept as the
// object's Extra (§10: new optional fields may be added), re-encoded as-is.

// CBOR major types, from the first byte of an item.
const (
	majorUint  = 0
	majorBytes = 2
	majorText  = 3
	majorArray = 4
	majorMap   = 5
)

func majorOf(raw []byte) int {
	if len(raw) == 0 {
		return -1
	}
	return int(raw[0] >> 5)
}

// canonicalBody checks that body is one accepted CBOR item (1001 otherwise)
// and returns its deterministic encoding, so that every raw value kept from
// it is deterministic too.
func canonicalBody(body []byte) ([]byte, error) {
	return amp.Limits{}.Canonical(body)
}

// unmarshal decodes an item already checked by amp into v; a shape error is
// 4001 wrong_type, anything else keeps amp's code.
func unmarshal(raw []byte, v any, path, want string) error {
	if err := amp.Unmarshal(raw, v); err != nil {
		if errors.Is(err, amp.ErrName("wrong_shape")) {
			return badRequest(ErrWrongType, "%s must be %s", path, want).WithCause(err)
		}
		return err
	}
	return nil
}

// object is a CBOR map being taken apart.
type object struct {
	path string
	m    map[string]cbor.RawMessage
}

// decodeObject decodes raw (a checked CBOR item) as a map with text keys.
// An empty path stands for the top-level object, named kind in messages.
func decodeObject(raw []byte, path, kind string) (*object, error) {
	name := path
	if name == "" {
		name = kind
	}
	if majorOf(raw) != majorMap {
		return nil, badRequest(ErrWrongType, "%s must be a map", name)
	}
	var m map[string]cbor.RawMessage
	if err := unmarshal(raw, &m, name, "a map with text keys"); err != nil {
		return nil, err
	}
	return &object{path: path, m: m}, nil
}

func (o *object) take(key string) (cbor.RawMessage, bool) {
	r, ok := o.m[key]
	if ok {
		delete(o.m, key)
	}
	return r, ok
}

func (o *object) missing(key string) error {
	return badRequest(ErrMissingField, "%s is required", fieldPath(o.path, key))
}

// text takes an optional text field. Present text must not be empty: an
// optional field is either absent or meaningful, which keeps one encoding
// per value.
func (o *object) text(key string) (string, bool, error) {
	raw, ok := o.take(key)
	if !ok {
		return "", false, nil
	}
	p := fieldPath(o.path, key)
	if majorOf(raw) != majorText {
		return "", false, badRequest(ErrWrongType, "%s must be a text string", p)
	}
	var s string
	if err := unmarshal(raw, &s, p, "a text string"); err != nil {
		return "", false, err
	}
	if s == "" {
		return "", false, badRequest(ErrInvalidField, "%s must not be empty", p)
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
	p := fieldPath(o.path, key)
	if majorOf(raw) != majorUint {
		return nil, badRequest(ErrWrongType, "%s must be an unsigned integer", p)
	}
	var n uint64
	if err := unmarshal(raw, &n, p, "an unsigned integer"); err != nil {
		return nil, err
	}
	return &n, nil
}

// bytes takes a required byte string field.
func (o *object) bytes(key string) ([]byte, error) {
	raw, ok := o.take(key)
	if !ok {
		return nil, o.missing(key)
	}
	p := fieldPath(o.path, key)
	if majorOf(raw) != majorBytes {
		return nil, badRequest(ErrWrongType, "%s must be a byte string", p)
	}
	b := []byte{}
	if err := unmarshal(raw, &b, p, "a byte string"); err != nil {
		return nil, err
	}
	return b, nil
}

// array takes an optional array field and returns its items; ok reports
// presence (an empty array is present).
func (o *object) array(key string) (items []cbor.RawMessage, ok bool, err error) {
	raw, ok := o.take(key)
	if !ok {
		return nil, false, nil
	}
	p := fieldPath(o.path, key)
	if majorOf(raw) != majorArray {
		return nil, false, badRequest(ErrWrongType, "%s must be an array", p)
	}
	items = []cbor.RawMessage{}
	if err := unmarshal(raw, &items, p, "an array"); err != nil {
		return nil, false, err
	}
	return items, true, nil
}

// textItem decodes one array item as a text string.
func textItem(raw []byte, p string) (string, error) {
	if majorOf(raw) != majorText {
		return "", badRequest(ErrWrongType, "%s must be a text string", p)
	}
	var s string
	if err := unmarshal(raw, &s, p, "a text string"); err != nil {
		return "", err
	}
	return s, nil
}

// raw takes an optional field of any type, kept as deterministic CBOR.
func (o *object) raw(key string) (cbor.RawMessage, bool) {
	return o.take(key)
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
	if len(o.m) == 0 {
		return nil
	}
	return o.m
}

// Encoding. A body is built as map[string]any holding strings, []byte,
// uint64, []string, nested map[string]any and cbor.RawMessage values, then
// encoded once by amp.Marshal (deterministic, RFC 8949 §4.2.1).

// putExtra copies extra fields into m, refusing a key that is a defined
// field of the object kind (present or not) and an empty raw value (it would
// encode as null and not survive a round trip).
func putExtra(m map[string]any, extra map[string]cbor.RawMessage, kind string) error {
	keys := make([]string, 0, len(extra))
	for k := range extra {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
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
		case "id", "name", "version", "input_schema", "output_schema", "supported_ranges", "deprecated_ranges", "notes":
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
