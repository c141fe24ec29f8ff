package schemagraph

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

func mustParse(t *testing.T, doc string) any {
	t.Helper()
	v, err := Parse([]byte(doc), Options{})
	if err != nil {
		t.Fatalf("Parse(%.40q): %v", doc, err)
	}
	return v
}

// TestDeepNestingIsRefusedAtTheBound: a document nested one level past
// MaxDepth is refused with the pointer of the container, before the
// parser descends further; one at the bound is read.
func TestDeepNestingIsRefusedAtTheBound(t *testing.T) {
	for _, depth := range []int{DefaultMaxDepth, DefaultMaxDepth + 1, 100000} {
		doc := strings.Repeat("[", depth) + strings.Repeat("]", depth)
		_, err := Parse([]byte(doc), Options{})
		if depth <= DefaultMaxDepth {
			if err != nil {
				t.Fatalf("depth %d: %v", depth, err)
			}
			continue
		}
		var e *Error
		if !errors.As(err, &e) || e.Kind != KindTooDeep || e.Pointer != strings.Repeat("/0", DefaultMaxDepth) {
			t.Fatalf("depth %d: %v (pointer %.20q)", depth, err, e.Pointer)
		}
	}
}

// TestDuplicateMemberIsRefusedUnlessTheCallerKeepsTheLast: a member named
// twice is refused (the two readers of a document could disagree on its
// value); a caller that reads as encoding/json does gets the last value
// and is told where.
func TestDuplicateMemberIsRefusedUnlessTheCallerKeepsTheLast(t *testing.T) {
	doc := []byte(`{"a": {"x/y": 1, "x/y": 2}}`)
	if _, err := Parse(doc, Options{}); KindOf(err) != KindDuplicate {
		t.Fatalf("duplicate: %v", err)
	} else if err.(*Error).Pointer != "/a/x~1y" {
		t.Fatalf("pointer %q", err.(*Error).Pointer)
	}
	var at []string
	v, err := Parse(doc, Options{Duplicate: func(p string) { at = append(at, p) }})
	if err != nil || len(at) != 1 || at[0] != "/a/x~1y" {
		t.Fatalf("kept last: %v %v", err, at)
	}
	if got := v.(map[string]any)["a"].(map[string]any)["x/y"]; got != json.Number("2") {
		t.Fatalf("value %v, want the last", got)
	}
}

// TestHostileSizesAreRefused: bytes and value counts beyond the bounds,
// numbers the caller's model refuses, and malformed input all fail with
// their kind, never a partial value.
func TestHostileSizesAreRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		doc  string
		o    Options
		want Kind
	}{
		{"too many bytes", `[1, 2, 3]`, Options{MaxBytes: 8}, KindTooLarge},
		{"too many values", `[1, 2, 3]`, Options{MaxNodes: 3}, KindTooManyNodes},
		{"float64 overflow", `{"maximum": 1e400}`, Options{Float64: true}, KindNumber},
		{"number vetoed", `[1, 2.5]`, Options{Number: func(s string) bool { return !strings.Contains(s, ".") }}, KindNumber},
		{"empty", ` `, Options{}, KindEmpty},
		{"truncated", `{"a": [1,`, Options{}, KindSyntax},
		{"trailing", `{} {}`, Options{}, KindTrailing},
		{"missing colon", `{"a" 1}`, Options{}, KindSyntax},
	} {
		v, err := Parse([]byte(c.doc), c.o)
		if KindOf(err) != c.want || v != nil {
			t.Errorf("%s: %v, %v; want kind %d", c.name, v, err, c.want)
		}
	}
	if v, err := Parse([]byte(`[1, 2, 3]`), Options{MaxNodes: 4, MaxBytes: 9}); err != nil || len(v.([]any)) != 3 {
		t.Fatalf("at the bounds: %v %v", v, err)
	}
}

// TestPointerEscapingTheDocumentNamesNothing: a pointer that climbs out
// ("..", negative or padded indexes, a step through a scalar) names
// nothing, and escaped tokens name exactly the member they spell.
func TestPointerEscapingTheDocumentNamesNothing(t *testing.T) {
	root := mustParse(t, `{"a/b": {"~": [true, {"x": false}]}, "s": "text"}`)
	for _, p := range []string{"/..", "/a~1b/~0/-1", "/a~1b/~0/01", "/a~1b/~0/+1", "/a~1b/~0/2", "/s/0", "/a/b", "a~1b", "/a~1b/~0/1/x/y"} {
		if v, ok := Pointer(root, p); ok {
			t.Errorf("Pointer(%q) = %v", p, v)
		}
	}
	if v, ok := Pointer(root, "/a~1b/~0/1/x"); !ok || v != false {
		t.Fatalf("escaped pointer: %v %v", v, ok)
	}
	// A fragment is percent-decoded before it is read as a pointer, and a
	// relative reference cannot climb above the root of its base.
	u, frag, err := Resolve("ampbundle:///caps/x/in.json", "../../../../etc/passwd#/a~1b/%7E0")
	if err != nil || u.String() != "ampbundle:///etc/passwd" || frag != "/a~1b/~0" {
		t.Fatalf("Resolve: %v %q %v", u, frag, err)
	}
	if _, _, err := Resolve("ampbundle:///x", "%zz"); err != ErrRefURI {
		t.Fatalf("bad ref: %v", err)
	}
	if _, _, err := Resolve("%zz", "#"); err != ErrBaseURI {
		t.Fatalf("bad base: %v", err)
	}
}

// TestDuplicateAnchorsAreReported: an anchor declared twice in one
// resource is listed; the first in walk order is the one indexed, and
// anchors inside an embedded resource or a data keyword are not the
// document's.
func TestDuplicateAnchorsAreReported(t *testing.T) {
	root := mustParse(t, `{"$defs": {"a": {"$anchor": "n"}, "b": {"$anchor": "n", "$dynamicAnchor": "d"},
		"e": {"$id": "https://example.com/e", "$anchor": "inner"}},
		"enum": [{"$anchor": "data"}], "items": [{"$dynamicAnchor": "d"}]}`)
	r := Index(root)
	if r.Anchors["n"] != "/$defs/a" || len(r.Duplicates) != 2 || r.Duplicates[0] != "n" || r.Duplicates[1] != "d" {
		t.Fatalf("index %+v", r)
	}
	if _, ok := r.Anchors["inner"]; ok {
		t.Fatal("an embedded resource's anchor was indexed as the document's")
	}
	if _, ok := r.Anchors["data"]; ok {
		t.Fatal("an anchor inside enum was indexed")
	}
	if r.IDs["/$defs/e"] != "https://example.com/e" || r.DynamicAnchors["d"] != "/$defs/b" {
		t.Fatalf("ids %v dynamic %v", r.IDs, r.DynamicAnchors)
	}
}

// TestArtifactKeysThatClimbOutAreRefused: keys with dot segments, empty
// segments, backslashes or control bytes are not artifact keys.
func TestArtifactKeysThatClimbOutAreRefused(t *testing.T) {
	for _, k := range []string{"", "/a", "a/", "a//b", "./a", "a/../b", "..", `a\b`, "a\x00b", strings.Repeat("a", MaxKeyLen+1)} {
		if ValidKey(k) {
			t.Errorf("ValidKey(%q) = true", k)
		}
	}
	if !ValidKey("schemas/a b.json") || ArtifactURL("schemas/a b.json") != "ampbundle:///schemas/a%20b.json" {
		t.Fatal("a plain key is refused or encoded otherwise")
	}
}

// TestEncodingJSONPathReadsAsTheTokenPath: the fast path the quick check
// uses refuses and keeps what the token path (last duplicate wins,
// float64) does, so the two readers of a schema cannot disagree.
func TestEncodingJSONPathReadsAsTheTokenPath(t *testing.T) {
	for _, doc := range []string{`{"a": 1, "a": {"b": [2.5, null]}}`, `{"maximum": 1e400}`, ` `, `{"a" 1}`, `{} []`, `"x"`, `[[["]]]"]]]`, `[[[1]]]`, `{"a": [[{"b": "\\\""}]]}`,
		strings.Repeat("[", 10001) + strings.Repeat("]", 10001), strings.Repeat("[", 10000) + strings.Repeat("]", 10000)} {
		for _, o := range []Options{{MaxDepth: 10000, Float64: true}, {MaxDepth: 3}, {}} {
			fo := o
			fo.EncodingJSON = true
			o.Duplicate = func(string) {}
			fast, ferr := Parse([]byte(doc), fo)
			slow, serr := Parse([]byte(doc), o)
			if (ferr == nil) != (serr == nil) || !reflect.DeepEqual(fast, slow) {
				t.Errorf("%.30q %+v: EncodingJSON %v %v; tokens %v %v", doc, o, fast, ferr, slow, serr)
			}
		}
	}
}

// KindOf returns the Kind of a Parse error, 0 for any other error.
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return 0
}
