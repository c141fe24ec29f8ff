package schemagraph

import (
	"strings"
	"testing"
)

// TestRelativeRefAgainstAURNBaseResolvesAsTheValidatorDoes: a publisher
// gives a schema the "$id" "urn:example:a" and writes "$ref":"b" in it.
// The validator (jsonschema v5.3.1, resolveURL) appends "b" to a "urn:"
// base ("urn:example:ab") and takes a "urn:" or absolute reference as
// written (an upper-case scheme, dot segments kept), where RFC 3986 gives
// "urn:///b" and normalises: a checker resolving by RFC 3986 followed an
// artifact the validator never loads (review 53). Resolve names the
// validator's target, or answers ErrSpelling where net/url would write
// it otherwise.
func TestRelativeRefAgainstAURNBaseResolvesAsTheValidatorDoes(t *testing.T) {
	// Targets as jsonschema v5.3.1's resolveURL writes
	// them, without the fragment.
	for _, tc := range []struct {
		base, ref string
		target    string // "" when Resolve must refuse
		frag      string
	}{
		{"urn:example:a", "b", "urn:example:ab", ""},
		{"urn:example:a", "b#/x", "urn:example:ab", "/x"},
		{"urn:example:a", "#s", "urn:example:a", "s"},
		{"urn:example:a", "", "urn:example:a", ""},
		{"ampbundle:///x/a.json", "urn:other:z#/p", "urn:other:z", "/p"},
		{"ampbundle:///x/a.json", "../b.json#k", "ampbundle:///b.json", "k"},
		{"ampbundle:///x/a.json", "http://h/a/../b", "http://h/a/../b", ""},
		{"ampbundle:///x/a.json", "HTTP://h/b", "", ""},
		{"urn:example:a", "URN:example:b", "", ""},
		{"ampbundle:///x/a.json", "#/a~1b/%7E0", "ampbundle:///x/a.json", "/a~1b/~0"},
	} {
		u, frag, err := Resolve(tc.base, tc.ref)
		if tc.target == "" {
			if err == nil {
				t.Errorf("Resolve(%q, %q) = %s, which the validator spells otherwise: want an error", tc.base, tc.ref, u)
			}
			continue
		}
		if err != nil {
			t.Errorf("Resolve(%q, %q): %v", tc.base, tc.ref, err)
			continue
		}
		if u.String() != tc.target || frag != tc.frag {
			t.Errorf("Resolve(%q, %q) = %s %q, want %s %q", tc.base, tc.ref, u, frag, tc.target, tc.frag)
		}
	}
}

// TestSchemaPositionIsWhereTheValidatorListsSubschemas: a JSON pointer
// "$ref" into a spot the validator does not list as a subschema (an
// unknown keyword, "$defs" itself, a value inside "enum") makes
// jsonschema v5.3.1 list the subschemas it finds there, whose anchors
// then become the document's (review 53): SchemaPosition tells the two
// apart, as the library's subschema table does, for the pointer as the
// library spells its keys (a member name percent-encoded where
// url.PathEscape encodes it, a keyword as it is) and for the draft's own
// table. A member of "$defs" that is not a schema is still listed (the
// library lists every member; a caller checks what stands there).
func TestSchemaPositionIsWhereTheValidatorListsSubschemas(t *testing.T) {
	doc := mustParse(t, `{"$defs":{"a":{"items":[{"not":true}],"properties":{"p/q":{}}},"n":1},
		"x-decoy":{"$defs":{"d":{}}},"enum":[{}],"items":{"type":"string"},"allOf":[true,{}],
		"dependencies":{"a":["b"],"c":{}},"definitions":{"a;b":{},"é":{}}}`)
	for ptr, want := range map[string]bool{
		"":                            true,
		"/$defs/a":                    true,
		"/$defs/a/items/0":            true,
		"/$defs/a/items/0/not":        true,
		"/$defs/a/properties/p~1q":    true,
		"/items":                      true,
		"/allOf/0":                    true,
		"/allOf/1":                    true,
		"/dependencies/c":             true,
		"/$defs":                      false,
		"/$defs/n":                    true,
		"/definitions/a%3Bb":          true,
		"/definitions/a;b":            false,
		"/definitions/%C3%A9":         true,
		"/definitions/é":              false,
		"/%24defs/a":                  false,
		"/$defs/a/properties":         false,
		"/$defs/a/items/00":           false,
		"/x-decoy":                    false,
		"/x-decoy/$defs/d":            false,
		"/enum/0":                     false,
		"/allOf":                      false,
		"/allOf/2":                    false,
		"/dependencies/a":             true,
		"/$defs/absent":               false,
		"x":                           false,
		"/$defs/a/items/0/not/absent": false,
	} {
		if got := SchemaPosition(doc, ptr, Draft2020); got != want {
			t.Errorf("SchemaPosition(%q) = %v, want %v", ptr, got, want)
		}
	}
	for _, c := range []struct {
		ptr   string
		draft int
		want  bool
	}{
		{"/$defs/a", Draft7, false},
		{"/definitions/a%3Bb", Draft7, true},
		{"/allOf/0", Draft4, true},
		{"/items", Draft4, true},
		{"/$defs/a/items/0/not", Draft2019, true},
	} {
		if got := SchemaPosition(doc, c.ptr, c.draft); got != c.want {
			t.Errorf("SchemaPosition(%q, draft %d) = %v, want %v", c.ptr, c.draft, got, c.want)
		}
	}
}

// TestIndexListsPointerReferences: Index lists the pointer references of
// the schemas it walks, so that a caller can tell whether one names a
// spot that is not a schema position; one inside an embedded resource
// is only flagged.
func TestIndexListsPointerReferences(t *testing.T) {
	r := Index(mustParse(t, `{"allOf":[{"$ref":"#/x-decoy"},{"$ref":"#s"}],"properties":{"a":{"$dynamicRef":"o.json#/$defs/b"}},
		"$defs":{"e":{"$id":"e.json","not":{"$ref":"#/y"}}},"x-decoy":{"$ref":"#/z"}}`))
	want := []string{"#/x-decoy", "o.json#/$defs/b"}
	if strings.Join(r.PointerRefs, " ") != strings.Join(want, " ") || !r.EmbeddedPointerRef {
		t.Fatalf("PointerRefs = %q, EmbeddedPointerRef %v; want %q, true", r.PointerRefs, r.EmbeddedPointerRef, want)
	}
}
