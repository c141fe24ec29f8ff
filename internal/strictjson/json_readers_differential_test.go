package strictjson_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
	"github.com/ampbundle/ampbundle/internal/offlineschema"
	"github.com/ampbundle/ampbundle/internal/schemagraph"
	"github.com/ampbundle/ampbundle/internal/strictjson"
)

// readersDepth is deep enough that no seed meets a reader's nesting bound;
// the bounds count differently (jcs counts a scalar as a level) and are
// pinned by each reader's own tests, so a text one of them refuses for
// its nesting is not compared.
const readersDepth = 48

// differentialSeeds are texts on which two readers of the module once read
// one text two ways, or could: duplicates after unescaping, escapes in
// keyword names, bytes that are not UTF-8 and lone surrogate escapes
// (docs/SPEC-DECISIONS.md JSON-1), a BOM, whitespace JSON does not have,
// trailing data, NUL bytes, and numbers at the edges of the model.
var differentialSeeds = []string{
	`{"a":[1,{"b":"c"}],"d":null,"e":true,"f":false}`,
	`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"$id":"x","\u0024id":"y"}`,
	`{"\u0024ref":"#/$defs/a","$defs":{"a":{}}}`,
	`{"a":"\ud800"}`, `{"\ud800":1,"\udc00":2}`, `["\udc00x"]`, `["\ud800\u0041"]`,
	`["\ud800\ud800"]`, `["\udbff\udfff"]`, `["\\ud800"]`, `["\\\ud800"]`, `"\uDFFF"`,
	"{\"a\":\"\xff\"}", "{\"a\xfe\":1,\"a\xff\":2}", "\"\xed\xa0\x80\"",
	"\ufeff{}", "{}\u00a0", "{}\f", "{\"a\":1}\x00", "[\"\x00\"]", `{"a":"\u0000"}`,
	`{} {}`, `0A0`, `[1 2]`, `{"a":1,}`, ``, ` `, `[`, `"\u12`, `"\ud800\u12"`,
	`[-0]`, `[1e400]`, `[1e-400]`, `[1.0, 1, 1E0]`, `[18446744073709551616]`, `[-01]`,
	`[1e99999999999999999999]`, `[0.` + "1111111111111111111111111111111111111111" + `]`,
}

// FuzzJSONReadersReadOneTextOneWay: the module's own JSON readers of
// untrusted text (internal/jcs for signed AGH and A2A documents,
// strictjson.Check for contracts, offlineschema.ValueFromJSON for
// arguments, params and handler results, schemagraph.Parse's token path
// under it) accept and refuse the same texts and read the same value,
// save where a documented rule sets them apart: numbers (jcs refuses one
// outside the double range, ValueFromJSON one outside its model, Check and
// schemagraph keep the text), nesting (see readersDepth), and schemagraph
// alone reading replaced strings as encoding/json does (GRAPH-1: schema
// documents are read as the validator reads them).
func FuzzJSONReadersReadOneTextOneWay(f *testing.F) {
	for _, s := range differentialSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tree, jerr := jcs.Parse(data, readersDepth)
		if errors.Is(jerr, jcs.ErrNumber) || errors.Is(jerr, jcs.ErrTooDeep) {
			return
		}
		cerr := strictjson.Check(data, readersDepth+1)
		v, verr := offlineschema.ValueFromJSON(data)
		if amp.NameOf(verr) == offlineschema.ErrLimitExceeded {
			return // nested past offlineschema.MaxDepth, which jcs allows here
		}
		exact := jcs.ExactStrings(data)
		sg, sgerr := schemagraph.Parse(data, schemagraph.Options{MaxDepth: readersDepth + 1})
		if jerr != nil {
			if cerr == nil {
				t.Fatalf("jcs refuses (%v), strictjson.Check accepts %q", jerr, data)
			}
			if verr == nil {
				t.Fatalf("jcs refuses (%v), ValueFromJSON accepts %q as %#v", jerr, data, v)
			}
			if exact && sgerr == nil {
				t.Fatalf("jcs refuses (%v), schemagraph.Parse accepts %q", jerr, data)
			}
			return
		}
		if !exact {
			t.Fatalf("jcs accepts %q, which ExactStrings refuses", data)
		}
		if cerr != nil {
			t.Fatalf("jcs accepts, strictjson.Check refuses %q: %v", data, cerr)
		}
		want := plain(tree)
		if sgerr != nil || !reflect.DeepEqual(sg, want) {
			t.Fatalf("%q: jcs reads %#v, schemagraph.Parse %#v (%v)", data, want, sg, sgerr)
		}
		if verr != nil {
			if amp.NameOf(verr) != offlineschema.ErrNotJSONCompatible {
				t.Fatalf("jcs accepts, ValueFromJSON refuses %q: %v", data, verr)
			}
			return // a number outside the model
		}
		if !reflect.DeepEqual(v, want) {
			t.Fatalf("%q: jcs reads %#v, ValueFromJSON %#v", data, want, v)
		}
	})
}

// plain turns a jcs tree into the types schemagraph.Parse returns.
func plain(v any) any {
	switch t := v.(type) {
	case jcs.Object:
		m := make(map[string]any, len(t))
		for _, mem := range t {
			m[mem.Name] = plain(mem.Value)
		}
		return m
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			out[i] = plain(e)
		}
		return out
	case json.Number, string, bool, nil:
		return t
	}
	panic("jcs tree holds a foreign type")
}
