package offlineschema

import (
	"errors"
	"fmt"
	"net/url"
	"sort"
	"strconv"
	"strings"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/santhosh-tekuri/jsonschema/v5"
)

// MaxViolations caps the Violations reported by one failed Validate. The
// list is sorted first, so the cap keeps the same entries every time.
const MaxViolations = 16

// Violation is one reason a value does not match its schema. It carries no
// schema value, pattern, enum member or instance value: only where, and
// which keyword.
type Violation struct {
	// InstanceLocation is the JSON pointer (RFC 6901) of the failing value,
	// "" for the whole value. For "required" it points at the missing
	// property ("/text"). Pointers longer than 512 bytes are cut after
	// their last whole segment that fits.
	InstanceLocation string `json:"instance_location" cbor:"instance_location"`
	// Keyword is the failing keyword: "required", "type", "maxLength",
	// "additionalProperties", ... For an applicator whose subschema is
	// false ("properties": {"x": false}) it is the applicator; for a value
	// refused by a whole false schema it is "false". For anyOf, oneOf, not
	// and contains the combinator itself is reported, not the failures of
	// its branches.
	Keyword string `json:"keyword" cbor:"keyword"`
}

// Validate validates a JSON-model value (see the package documentation). A
// failure is 4004 schema_violation with Details = []Violation (sorted by
// location then keyword, deduplicated, at most MaxViolations). A value
// outside the model is not_json_compatible (code 0: the caller's Go value,
// not a peer's), and so is a value nested deeper than MaxDepth; a loop the
// library only finds while validating is invalid_schema (code 0). A value
// whose worst case is over MaxValidationCost is refused before the library
// starts: 1001 validation_too_costly (cost.go).
func (s *Schema) Validate(v any) (err error) {
	defer func() {
		// The library re-panics anything but its own two panic types,
		// for example on a json.Number that is not a number. Fail closed.
		if r := recover(); r != nil {
			err = amp.Named(amp.CodeInternalError, "internal_error", "schema validation failed unexpectedly").
				WithCause(fmt.Errorf("offlineschema: jsonschema panicked: %v", r))
		}
	}()
	// Before the library: a value whose worst case is over the budget
	// is refused without being validated.
	if err := s.checkCost(v); err != nil {
		return err
	}
	if s.onLibrary != nil {
		s.onLibrary()
	}
	verr := s.compiled.Validate(v)
	if verr == nil {
		return nil
	}
	var ve *jsonschema.ValidationError
	if errors.As(verr, &ve) {
		vs, total := s.violations(ve, v)
		// No cause: the library's text quotes instance values.
		return amp.Named(amp.CodeSchemaViolation, ErrSchemaViolation, "value does not match the schema (%d violations)", total).WithDetails(vs)
	}
	var bad jsonschema.InvalidJSONTypeError
	if errors.As(verr, &bad) {
		return amp.Named(0, ErrNotJSONCompatible, "value holds a go type that is not part of the json data model").WithCause(verr)
	}
	return amp.Named(0, ErrInvalidSchema, "schema cannot validate this value").WithCause(verr)
}

// violations flattens the library's error tree into sorted, deduplicated
// Violations, capped at MaxViolations; total is the count before the cap.
func (s *Schema) violations(root *jsonschema.ValidationError, instance any) (vs []Violation, total int) {
	seen := make(map[Violation]struct{})
	add := func(v Violation) {
		if _, dup := seen[v]; !dup {
			seen[v] = struct{}{}
			vs = append(vs, v)
		}
	}
	var walk func(ve *jsonschema.ValidationError)
	walk = func(ve *jsonschema.ValidationError) {
		kw := keywordOf(ve.KeywordLocation)
		if len(ve.Causes) > 0 && !reportsItself(kw) {
			for _, c := range ve.Causes {
				walk(c)
			}
			return
		}
		loc := instancePointer(ve.InstanceLocation)
		if kw == "required" {
			if missing := s.missing(ve, instance); len(missing) > 0 {
				for _, name := range missing {
					add(Violation{InstanceLocation: clipPointer(loc + "/" + escapeToken(name)), Keyword: kw})
				}
				return
			}
		}
		add(Violation{InstanceLocation: clipPointer(loc), Keyword: kw})
	}
	walk(root)
	sort.Slice(vs, func(i, j int) bool {
		if vs[i].InstanceLocation != vs[j].InstanceLocation {
			return vs[i].InstanceLocation < vs[j].InstanceLocation
		}
		return vs[i].Keyword < vs[j].Keyword
	})
	total = len(vs)
	if len(vs) > MaxViolations {
		vs = vs[:MaxViolations:MaxViolations]
	}
	return vs, total
}

// reportsItself lists the keywords whose failure is reported as such rather
// than by the failures of their branches: listing why every anyOf/oneOf
// branch failed, or why each item failed "contains", would name constraints
// the value did not have to meet.
func reportsItself(kw string) bool {
	switch kw {
	case "anyOf", "oneOf", "not", "contains", "minContains", "maxContains":
		return true
	}
	return false
}

// missing returns the names of the "required" properties absent from the
// object that ve is about, using the compiled schema the error points to.
// It returns nil when either cannot be found.
func (s *Schema) missing(ve *jsonschema.ValidationError, instance any) []string {
	loc, ok := strings.CutSuffix(ve.AbsoluteKeywordLocation, "/required")
	if !ok {
		return nil
	}
	sch := s.byLocation[loc]
	if sch == nil {
		return nil
	}
	obj, ok := lookup(instance, ve.InstanceLocation).(map[string]any)
	if !ok {
		return nil
	}
	var out []string
	for _, name := range sch.Required {
		if _, ok := obj[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// keywordOf returns the failing keyword of a keyword location such as
// "/properties/a/$ref/required": the last segment in keyword position,
// skipping the property names and indexes that follow applicators. A
// location that names no keyword (a false schema at the root) gives
// "false"; a segment that is not a keyword this library reports gives
// "schema", so no schema text can ever become a keyword.
func keywordOf(loc string) string {
	if loc == "" {
		return "false"
	}
	segs := strings.Split(loc[1:], "/")
	kw := ""
	for i := 0; i < len(segs); {
		kw = segs[i]
		i++
		switch kw {
		case "properties", "patternProperties", "dependentSchemas", "$defs", "definitions":
			i++ // a name
		case "dependencies", "dependentRequired":
			i++ // a name, then an index in the array form
			if i < len(segs) && isIndex(segs[i]) {
				i++
			}
		case "allOf", "anyOf", "oneOf", "prefixItems":
			i++ // an index
		case "items":
			if i < len(segs) && isIndex(segs[i]) { // draft-07 array form
				i++
			}
		}
	}
	if !reportedKeyword(kw) {
		return "schema"
	}
	return kw
}

func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// reportedKeyword lists the keywords jsonschema v5 can name in a keyword
// location (validation and applicator keywords of drafts 4 to 2020-12).
func reportedKeyword(kw string) bool {
	switch kw {
	case "type", "const", "enum", "format", "minProperties", "maxProperties",
		"required", "properties", "patternProperties", "additionalProperties",
		"propertyNames", "dependencies", "dependentRequired", "dependentSchemas",
		"minItems", "maxItems", "uniqueItems", "items", "additionalItems",
		"prefixItems", "contains", "minContains", "maxContains", "minLength",
		"maxLength", "pattern", "contentEncoding", "contentMediaType",
		"contentSchema", "minimum", "exclusiveMinimum", "maximum",
		"exclusiveMaximum", "multipleOf", "not", "allOf", "anyOf", "oneOf",
		"if", "then", "else", "unevaluatedProperties", "unevaluatedItems",
		"$ref", "$dynamicRef", "$recursiveRef":
		return true
	}
	return false
}

// instancePointer turns the library's instance location, whose segments
// are percent-encoded JSON pointer tokens, into a plain RFC 6901 pointer.
func instancePointer(loc string) string {
	if !strings.Contains(loc, "%") {
		return loc
	}
	segs := strings.Split(loc, "/")
	for i, s := range segs {
		if u, err := url.PathUnescape(s); err == nil {
			segs[i] = u
		}
	}
	return strings.Join(segs, "/")
}

// lookup returns the value at the library's instance location in v, or nil.
func lookup(v any, loc string) any {
	if loc == "" {
		return v
	}
	for _, tok := range strings.Split(loc[1:], "/") {
		if u, err := url.PathUnescape(tok); err == nil {
			tok = u
		}
		tok = strings.ReplaceAll(strings.ReplaceAll(tok, "~1", "/"), "~0", "~")
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			i, err := strconv.Atoi(tok)
			if err != nil || i < 0 || i >= len(x) {
				return nil
			}
			v = x[i]
		default:
			return nil
		}
	}
	return v
}
