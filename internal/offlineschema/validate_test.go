package offlineschema

import (
	"encoding/json"
	"fmt"
	"net/url"
	"reflect"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// paramsSchema is a realistic input schema: ten properties, a $ref to a
// shared artifact, formats, an enum and a pattern whose text must never
// show up in an error.
const paramsSchema = `{
	"$schema": "https://json-schema.org/draft/2020-12/schema",
	"type": "object",
	"required": ["text", "target"],
	"additionalProperties": false,
	"properties": {
		"text":     {"type": "string", "minLength": 1, "maxLength": 10},
		"target":   {"$ref": "../common.json#/$defs/lang"},
		"source":   {"$ref": "../common.json#/$defs/lang"},
		"email":    {"type": "string", "format": "email"},
		"when":     {"type": "string", "format": "date-time"},
		"count":    {"type": "integer", "minimum": 0, "maximum": 18446744073709551615},
		"ratio":    {"type": "number", "exclusiveMaximum": 1},
		"mode":     {"enum": ["fast", "SECRET-ENUM"]},
		"code":     {"type": "string", "pattern": "^SECRET[0-9]+$"},
		"tags":     {"type": "array", "items": {"type": "string"}, "maxItems": 3, "uniqueItems": true},
		"choice":   {"anyOf": [{"type": "string"}, {"type": "integer"}]},
		"never":    false,
		"nested":   {"type": "object", "required": ["a~b", "c/d"], "properties": {"deep": {"$ref": "#/$defs/deep"}}}
	},
	"$defs": {"deep": {"type": "object", "required": ["z"]}}
}`

func mustCompile(t testing.TB, l Loader, key string) *Schema {
	t.Helper()
	s, err := Compile(l, key, Options{OnExternalLoad: func(u string) { t.Errorf("external load %q", u) }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func keyOfURLString(s string) (string, bool) {
	u, err := url.Parse(s)
	if err != nil {
		return "", false
	}
	return keyOfURL(u)
}

func TestValidate(t *testing.T) {
	s := mustCompile(t, newLoader(with(bundleFiles, rootKey, paramsSchema)), rootKey)
	base := func(extra map[string]any) map[string]any {
		m := map[string]any{"text": "hello", "target": "en"}
		for k, v := range extra {
			if v == nil {
				delete(m, k)
			} else {
				m[k] = v
			}
		}
		return m
	}
	type V = Violation
	tests := []struct {
		name  string
		value any
		want  []Violation // nil: valid
	}{
		{name: "valid", value: base(map[string]any{
			"email": "a@example.com", "when": "2026-01-02T03:04:05Z", "count": uint64(18446744073709551615),
			"ratio": 0.5, "mode": "fast", "code": "SECRET12", "tags": []any{"a", "b"}, "choice": int64(3),
			"nested": map[string]any{"a~b": true, "c/d": true, "deep": map[string]any{"z": nil}},
		})},
		{name: "required", value: map[string]any{}, want: []V{{"/target", "required"}, {"/text", "required"}}},
		{name: "required escaped names", value: base(map[string]any{"nested": map[string]any{}}),
			want: []V{{"/nested/a~0b", "required"}, {"/nested/c~1d", "required"}}},
		{name: "required through $ref", value: base(map[string]any{"nested": map[string]any{"a~b": 1, "c/d": 1, "deep": map[string]any{}}}),
			want: []V{{"/nested/deep/z", "required"}}},
		{name: "type", value: base(map[string]any{"text": int64(5)}), want: []V{{"/text", "type"}}},
		{name: "type of root", value: []any{}, want: []V{{"", "type"}}},
		{name: "format email", value: base(map[string]any{"email": "SECRET-VALUE"}), want: []V{{"/email", "format"}}},
		{name: "format date-time", value: base(map[string]any{"when": "SECRET-VALUE"}), want: []V{{"/when", "format"}}},
		{name: "additionalProperties", value: base(map[string]any{"SECRET-KEY": "SECRET-VALUE"}), want: []V{{"", "additionalProperties"}}},
		{name: "maxLength", value: base(map[string]any{"text": "SECRET-VALUE-TOO-LONG"}), want: []V{{"/text", "maxLength"}}},
		{name: "minLength through $ref", value: base(map[string]any{"target": "e"}), want: []V{{"/target", "minLength"}}},
		{name: "enum", value: base(map[string]any{"mode": "SECRET-VALUE"}), want: []V{{"/mode", "enum"}}},
		{name: "pattern", value: base(map[string]any{"code": "SECRET-VALUE"}), want: []V{{"/code", "pattern"}}},
		{name: "exact maximum", value: base(map[string]any{"count": json.Number("18446744073709551616")}), want: []V{{"/count", "maximum"}}},
		{name: "minimum", value: base(map[string]any{"count": int64(-1)}), want: []V{{"/count", "minimum"}}},
		{name: "integer type refuses a fraction", value: base(map[string]any{"count": 1.5}), want: []V{{"/count", "type"}}},
		{name: "exclusiveMaximum", value: base(map[string]any{"ratio": int64(1)}), want: []V{{"/ratio", "exclusiveMaximum"}}},
		{name: "array items", value: base(map[string]any{"tags": []any{"a", int64(1), "a", "b"}}),
			want: []V{{"/tags", "maxItems"}, {"/tags", "uniqueItems"}, {"/tags/1", "type"}}},
		{name: "anyOf reported as itself", value: base(map[string]any{"choice": true}), want: []V{{"/choice", "anyOf"}}},
		{name: "false subschema", value: base(map[string]any{"never": "x"}), want: []V{{"/never", "properties"}}},
		{name: "several at once", value: map[string]any{"text": "", "email": "x", "count": "SECRET"},
			want: []V{{"/count", "type"}, {"/email", "format"}, {"/target", "required"}, {"/text", "minLength"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Validate(tt.value)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("valid value refused: %v", err)
				}
				return
			}
			e := ampErr(t, err, ErrSchemaViolation, amp.CodeSchemaViolation)
			got, ok := e.Details.([]Violation)
			if !ok {
				t.Fatalf("details %T", e.Details)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("violations %v, want %v", got, tt.want)
			}
			if e.Err != nil {
				t.Errorf("validation error has a cause: %v", e.Err)
			}
			js, _ := json.Marshal(e.Details)
			for _, secret := range []string{"SECRET", "example.com", "fast", "^", "18446744073709551615"} {
				if strings.Contains(e.Error(), secret) || strings.Contains(string(js), secret) {
					t.Errorf("error %q / details %s leak %q", e.Error(), js, secret)
				}
			}
		})
	}
}

func TestValidateFromCBOR(t *testing.T) {
	s := mustCompile(t, newLoader(with(bundleFiles, rootKey, paramsSchema)), rootKey)
	item, err := amp.Marshal(map[string]any{"text": "hello", "target": "en", "count": uint64(1 << 63), "ratio": 0.25})
	if err != nil {
		t.Fatal(err)
	}
	v, err := ValueFromCBOR(item)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Fatal(err)
	}
	item, _ = amp.Marshal(map[string]any{"text": "hello"})
	v, _ = ValueFromCBOR(item)
	e := ampErr(t, s.Validate(v), ErrSchemaViolation, amp.CodeSchemaViolation)
	if want := []Violation{{"/target", "required"}}; !reflect.DeepEqual(e.Details, want) {
		t.Errorf("details %v, want %v", e.Details, want)
	}
}

func TestViolationCap(t *testing.T) {
	props := map[string]any{}
	value := map[string]any{}
	for i := 0; i < 40; i++ {
		props[fmt.Sprintf("p%02d", i)] = map[string]any{"type": "string"}
		value[fmt.Sprintf("p%02d", i)] = int64(i)
	}
	doc, _ := json.Marshal(map[string]any{"properties": props})
	s := mustCompile(t, newLoader(map[string]string{rootKey: string(doc)}), rootKey)
	e := ampErr(t, s.Validate(value), ErrSchemaViolation, amp.CodeSchemaViolation)
	vs := e.Details.([]Violation)
	if len(vs) != MaxViolations || vs[0].InstanceLocation != "/p00" || vs[15].InstanceLocation != "/p15" {
		t.Errorf("violations %v", vs)
	}
	if !strings.Contains(e.Message, "40 violations") {
		t.Errorf("message %q", e.Message)
	}
}

func TestValidateOddValues(t *testing.T) {
	s := mustCompile(t, newLoader(map[string]string{rootKey: `{"type": "integer", "maximum": 3}`}), rootKey)
	ampErr(t, s.Validate(map[string]string{}), ErrNotJSONCompatible, 0)
	// A json.Number that is not a number makes the library panic; it must
	// come back as an error.
	if err := s.Validate(json.Number("SECRET")); amp.CodeOf(err) != amp.CodeInternalError {
		t.Errorf("bad json.Number: %v", err)
	}
}

func TestKeywordOf(t *testing.T) {
	for loc, want := range map[string]string{
		"":                                   "false",
		"/type":                              "type",
		"/properties/type":                   "properties",
		"/properties/required/required":      "required",
		"/properties/a/$ref/maxLength":       "maxLength",
		"/allOf/0/$ref/required":             "required",
		"/dependentRequired/a/0":             "dependentRequired",
		"/dependencies/a/0":                  "dependencies",
		"/dependencies/a/type":               "type",
		"/items/3":                           "items",
		"/items/3/enum":                      "enum",
		"/patternProperties/^a%2Fb$/pattern": "pattern",
		"/properties/x/SECRET":               "schema",
	} {
		if got := keywordOf(loc); got != want {
			t.Errorf("keywordOf(%q) = %q, want %q", loc, got, want)
		}
	}
}

func TestClipPointer(t *testing.T) {
	long := "/" + strings.Repeat("a", 300) + "/" + strings.Repeat("b", 300)
	if got := clipPointer(long); got != "/"+strings.Repeat("a", 300) {
		t.Errorf("clipPointer: %d bytes", len(got))
	}
	if got := clipPointer("/" + strings.Repeat("a", 600)); got != "" {
		t.Errorf("clipPointer of one long segment: %q", got)
	}
}
