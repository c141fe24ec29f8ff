package strictjson

import (
	"bytes"
	"encoding"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// maxEchoedName is how many bytes of a member name an error repeats.
const maxEchoedName = 64

// QuoteName returns a member name as errors show it: quoted, escaped to
// ASCII, cut to 64 bytes (at a rune boundary) with "..." when longer.
func QuoteName(name string) string {
	if len(name) <= maxEchoedName {
		return strconv.QuoteToASCII(name)
	}
	cut := maxEchoedName
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return strconv.QuoteToASCII(name[:cut]) + "..."
}

// errReplaced refuses a document with a string encoding/json would read
// with replacement (docs/SPEC-DECISIONS.md JSON-1).
var errReplaced = errors.New("a string is not UTF-8 or holds a lone surrogate escape")

// Check reports whether data is exactly one JSON value with no duplicate
// object member, every string read as written (UTF-8, no \u escape of a
// lone UTF-16 surrogate: encoding/json would read either as U+FFFD) and
// arrays and objects nested at most maxDepth deep.
func Check(data []byte, maxDepth int) error {
	if !jcs.ExactStrings(data) {
		return errReplaced
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	type frame struct {
		obj    bool
		keys   map[string]bool
		expKey bool
	}
	var stack []*frame
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return errors.New("not valid JSON") // empty
		}
		if err != nil {
			return errors.New("not valid JSON")
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{', '[':
				if top != nil && top.obj {
					top.expKey = true
				}
				if len(stack) >= maxDepth {
					return fmt.Errorf("nested deeper than %d", maxDepth)
				}
				stack = append(stack, &frame{obj: d == '{', keys: map[string]bool{}, expKey: true})
			default:
				stack = stack[:len(stack)-1]
			}
			if len(stack) == 0 {
				break // one whole value read
			}
			continue
		}
		if len(stack) == 0 {
			break // a scalar value
		}
		if top != nil && top.obj {
			if top.expKey {
				k, _ := tok.(string)
				if top.keys[k] {
					return fmt.Errorf("duplicate member %s", QuoteName(k))
				}
				top.keys[k] = true
				top.expKey = false
			} else {
				top.expKey = true
			}
		}
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("trailing data")
	}
	return nil
}

// Decode checks data as Check does and decodes it into v, refusing a
// member v has no field for. Member names of objects decoded into structs
// must be spelt exactly as the field's JSON name: encoding/json would match
// "Scopes" or "SCOPES" to the field "scopes" (and let a second spelling
// replace or merge into the first), so a name that differs only by case is
// refused as an unknown member. Map keys are compared exactly.
func Decode(data []byte, v any, maxDepth int) error {
	if err := Check(data, maxDepth); err != nil {
		return err
	}
	if err := exactNames(data, reflect.TypeOf(v)); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &te):
			return fmt.Errorf("member %s has the wrong type", QuoteName(te.Field))
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			name, uerr := strconv.Unquote(strings.TrimPrefix(err.Error(), "json: unknown field "))
			if uerr != nil {
				return errors.New("unknown member")
			}
			return errors.New("unknown member " + QuoteName(name))
		default:
			return errors.New("not valid JSON")
		}
	}
	return nil
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()
var textUnmarshalerType = reflect.TypeFor[encoding.TextUnmarshaler]()

// exactNames walks data (already checked by Check) along type t and
// refuses an object member decoded into a struct whose name is not exactly
// the JSON name of one of its fields. Types that decode themselves, and
// values of other kinds, are not walked.
func exactNames(data []byte, t reflect.Type) error {
	for t != nil && t.Kind() == reflect.Pointer {
		if t.Implements(unmarshalerType) || t.Implements(textUnmarshalerType) {
			return nil
		}
		t = t.Elem()
	}
	if t == nil || reflect.PointerTo(t).Implements(unmarshalerType) || reflect.PointerTo(t).Implements(textUnmarshalerType) {
		return nil
	}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 || string(trimmed) == "null" {
		return nil
	}
	switch t.Kind() {
	case reflect.Struct:
		if trimmed[0] != '{' {
			return nil // the decoder reports the wrong type
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &members); err != nil {
			return errors.New("not valid JSON")
		}
		fields := structFields(t)
		for name, raw := range members {
			ft, ok := fields[name]
			if !ok {
				return errors.New("unknown member " + QuoteName(name))
			}
			if err := exactNames(raw, ft); err != nil {
				return err
			}
		}
	case reflect.Slice, reflect.Array:
		if trimmed[0] != '[' {
			return nil
		}
		var items []json.RawMessage
		if err := json.Unmarshal(trimmed, &items); err != nil {
			return errors.New("not valid JSON")
		}
		for _, raw := range items {
			if err := exactNames(raw, t.Elem()); err != nil {
				return err
			}
		}
	case reflect.Map:
		if trimmed[0] != '{' {
			return nil
		}
		var members map[string]json.RawMessage
		if err := json.Unmarshal(trimmed, &members); err != nil {
			return errors.New("not valid JSON")
		}
		for _, raw := range members {
			if err := exactNames(raw, t.Elem()); err != nil {
				return err
			}
		}
	}
	return nil
}

// structFields returns the JSON name and type of each field encoding/json
// decodes into a struct of type t, following embedded structs (depth
// bounded: a type cannot embed itself by value). Of the fields that share
// a name, encoding/json decodes into the least nested one, or, at that
// depth, the one tagged alone; where that leaves more than one it decodes
// into none. The map holds that field, whichever order the fields come
// in, and no field for a name no field takes (Decode then refuses the
// member as unknown, as the decoder does): a walk that followed another
// field would check the names of a value the decoder reads into a type it
// never looks at (docs/SPEC-DECISIONS.md JSON-11).
func structFields(t reflect.Type) map[string]reflect.Type {
	type candidate struct {
		t      reflect.Type
		depth  int
		tagged bool
		n      int // fields of this depth and tagging
	}
	all := map[string]*candidate{}
	collectFields(t, 0, func(name string, ft reflect.Type, depth int, tagged bool) {
		c, ok := all[name]
		switch {
		case !ok || depth < c.depth || depth == c.depth && tagged && !c.tagged:
			all[name] = &candidate{t: ft, depth: depth, tagged: tagged, n: 1}
		case depth == c.depth && tagged == c.tagged:
			c.n++
		}
	})
	out := make(map[string]reflect.Type, len(all))
	for name, c := range all {
		if c.n == 1 {
			out[name] = c.t
		}
	}
	return out
}

// collectFields calls add with the JSON name, type, embedding depth and
// tagging of each field of t that encoding/json may decode into,
// following embedded structs.
func collectFields(t reflect.Type, depth int, add func(name string, ft reflect.Type, depth int, tagged bool)) {
	if depth > 16 {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		if tag == "-" {
			continue
		}
		name, _, _ := strings.Cut(tag, ",")
		ft := f.Type
		if f.Anonymous && name == "" {
			et := ft
			if et.Kind() == reflect.Pointer {
				et = et.Elem()
			}
			if et.Kind() == reflect.Struct {
				collectFields(et, depth+1, add)
				continue
			}
		}
		if !f.IsExported() {
			continue
		}
		tagged := name != ""
		if !tagged {
			name = f.Name
		}
		add(name, ft, depth, tagged)
	}
}
