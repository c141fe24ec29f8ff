package schemagraph

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse: the EncodingJSON fast path and the token path read every
// input alike; Parse accepts exactly what encoding/json accepts within the
// bounds, and gives the same value (numbers as json.Number) when no member
// is named twice; it never panics, and an Index of what it returns
// ends.
func FuzzParse(f *testing.F) {
	for _, s := range []string{`{}`, `[]`, `{"a": 1, "a": 2}`, `{"$ref": "#"}`, `[[[[1e400]]]]`, `"\ud800"`, "{\"a\":\xff}",
		`{"$defs": {"a": {"$anchor": "x", "$ref": "#x"}}, "$ref": "#/$defs/a"}`, `1 2`, ``} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, o := range []Options{{MaxDepth: 10000, Float64: true}, {MaxDepth: 5}, {}} {
			fo := o
			fo.EncodingJSON = true
			o.Duplicate = func(string) {}
			fast, ferr := Parse(data, fo)
			slow, serr := Parse(data, o)
			if (ferr == nil) != (serr == nil) || !reflect.DeepEqual(fast, slow) {
				t.Fatalf("%+v: EncodingJSON %v %v; tokens %v %v", o, fast, ferr, slow, serr)
			}
		}
		dups := 0
		v, err := Parse(data, Options{MaxDepth: 32, Duplicate: func(string) { dups++ }})
		if err != nil {
			if KindOf(err) == KindSyntax || KindOf(err) == KindEmpty || KindOf(err) == KindTrailing {
				if json.Valid(data) {
					t.Fatalf("valid json refused: %v", err)
				}
			}
			return
		}
		if !json.Valid(data) {
			t.Fatal("invalid json accepted")
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var want any
		if err := dec.Decode(&want); err != nil {
			t.Fatal(err)
		}
		if dups == 0 && !reflect.DeepEqual(v, want) {
			t.Fatalf("parsed %#v, encoding/json %#v", v, want)
		}
		_ = Index(v)
	})
}
