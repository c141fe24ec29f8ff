package offlineschema

import (
	"bytes"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// FuzzCompile compiles arbitrary bytes as the root artifact of a bundle that
// also holds the shared schemas of TestResolve. It must never panic, every
// error must be an *amp.Error with one of the compile names, and a compiled
// schema must validate a few values without panicking.
func FuzzCompile(f *testing.F) {
	for _, seed := range []string{
		paramsSchema,
		`{}`, `true`, `false`, `[]`, `{"type": `, `null`,
		`{"$ref": "sibling.json"}`,
		`{"$ref": "../common.json#/$defs/lang"}`,
		`{"$ref": "https://schemas.example.com/common.json#/$defs/x"}`,
		`{"$ref": "https://evil.example.net/s.json"}`,
		`{"$ref": "file:///etc/passwd"}`,
		`{"$ref": "ampbundle://other/x.json"}`,
		`{"$ref": "../../../../../etc/hostname"}`,
		`{"$id": "file:///etc/", "$ref": "hostname"}`,
		`{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"type": "string"}], "additionalItems": false}`,
		`{"$schema": "http://json-schema.org/draft-04/schema#", "id": "urn:x", "properties": {"a": {"$ref": "#"}}}`,
		`{"pattern": "^(?=a)"}`,
		`{"format": "emial"}`,
		`{"$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}, "$ref": "#/$defs/a"}`,
		`{"$dynamicAnchor": "n", "items": {"$dynamicRef": "#n"}}`,
		`{"contentMediaType": "application/json", "contentEncoding": "base64", "contentSchema": {"type": "object"}}`,
		`{"allOf": [{"$ref": "#/$defs/x"}], "$defs": {"x": {"required": ["a"]}}, "unevaluatedProperties": false}`,
		// Exponential validation: refused by the cost bound (cost.go)
		// before the library runs, for the deep value below.
		branchingRecursion,
		`{"items": {"oneOf": [{"$ref": "#"}, {"$ref": "#"}, {"$ref": "#"}]}}`,
		anyOfChain(26),
		`{"$dynamicAnchor": "n", "$ref": "#/$defs/t", "$defs": {"t": {"items": {"$dynamicRef": "#n"}}, "u": {"$dynamicAnchor": "n", "anyOf": [{"$ref": "#"}, {"$ref": "#"}]}}}`,
	} {
		f.Add([]byte(seed))
	}
	values := []any{nil, true, int64(-3), uint64(1 << 63), 2.5, "text", []any{"a", int64(1)},
		map[string]any{"text": "hi", "target": "en", "a": map[string]any{}},
		nestA(40, "x"), nestArray(40)}
	f.Fuzz(func(t *testing.T, doc []byte) {
		l := newLoader(with(bundleFiles, rootKey, string(doc)))
		s, err := Compile(l, rootKey, Options{OnExternalLoad: func(string) {}})
		if err != nil {
			var e *amp.Error
			if !errors.As(err, &e) || (e.Name != ErrUnresolvedRef && e.Name != ErrInvalidSchema) || e.Code != 0 {
				t.Fatalf("unexpected error %T %v", err, err)
			}
			if _, ok := err.(*amp.Error); !ok {
				t.Fatalf("error %T is not an *amp.Error at the top", err)
			}
			return
		}
		for _, v := range values {
			if err := s.Validate(v); err != nil {
				if _, ok := err.(*amp.Error); !ok {
					t.Fatalf("validate error %T %v", err, err)
				}
			}
		}
	})
}

// FuzzValueFromCBOR decodes arbitrary bytes. It must never panic; errors
// are *amp.Error; an accepted item is one amp's strict decoder accepts too,
// and ToCBOR of its value is exactly amp's deterministic form of it.
func FuzzValueFromCBOR(f *testing.F) {
	for _, c := range cborCases {
		f.Add(unhex(f, c.hex))
	}
	f.Add(unhex(f, "a2 6161 fb3ff8000000000000 6162 fa3fc00000")) // non-shortest floats
	f.Add(unhex(f, "a2 6162 01 6161 02"))                         // unsorted keys
	f.Add(unhex(f, "1900 01"))                                    // non-minimal head
	lim := amp.Limits{MaxDepth: 1024}
	f.Fuzz(func(t *testing.T, item []byte) {
		v, err := ValueFromCBOR(item)
		if err != nil {
			if _, ok := err.(*amp.Error); !ok {
				t.Fatalf("error %T %v", err, err)
			}
			return
		}
		canon, cerr := lim.Canonical(item)
		if cerr != nil {
			t.Fatalf("accepted an item amp refuses: %v", cerr)
		}
		out, err := ToCBOR(v)
		if err != nil {
			t.Fatalf("ToCBOR of a decoded value: %v", err)
		}
		if !bytes.Equal(out, canon) {
			t.Fatalf("ToCBOR = %x, deterministic form %x", out, canon)
		}
	})
}

// FuzzQuickCheck adds two arbitrary documents, the root artifact and the
// shared "capabilities/x/common.json" it can reference, to a QuickCheck over
// the TestResolve bundle. It must never panic; Add's errors are SchemaID's;
// and whatever the quick pass vouches for without compiling, Compile
// accepts too.
func FuzzQuickCheck(f *testing.F) {
	const sharedKey = "capabilities/x/common.json"
	shared := bundleFiles[sharedKey]
	for _, c := range quickCases() {
		f.Add([]byte(c.files[qk]), []byte(shared))
	}
	f.Add([]byte(paramsSchema), []byte(shared))
	f.Add([]byte(`{"$ref": "../common.json#/$defs/lang", "properties": {"a": {"$ref": "https://schemas.example.com/common.json#named"}}}`), []byte(shared))
	f.Add([]byte(`{"$schema": "http://json-schema.org/draft-07/schema#", "items": [{"$ref": "#/definitions/a"}], "definitions": {"a": {"type": "string"}}}`), []byte(shared))
	f.Add([]byte(`{"$ref": "../common.json#/$defs/a"}`), []byte(`{"$defs": {"a": {"anyOf": [{"$ref": "1.0.0/input.schema.json"}]}}}`))
	f.Add([]byte(`{"properties": {"x": {"$ref": "../common.json#l"}}}`), []byte(`{"$defs": {"l": {"$anchor": "l", "$ref": "#/$defs/m"}, "m": {"not": {"$ref": "#l"}}}}`))
	f.Add([]byte(`{"$ref": "https://schemas.example.com/c.json#/properties/p"}`), []byte(`{"$id": "https://schemas.example.com/c.json", "properties": {"p": {"format": "date"}}}`))
	// $schema spellings: the library's exact ones, and near misses it
	// refuses or loads (issue 29, item 7).
	for _, ms := range []string{"json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#/", "http://json-schema.org/schema#", "HTTP://json-schema.org/draft-07/schema#", "https://json-schema.org/draft/2020-12/schema#x#", "//json-schema.org/draft-07/schema"} {
		f.Add([]byte(`{"$schema": "`+ms+`", "$ref": "../common.json#/$defs/lang"}`), []byte(shared))
	}
	// Compile limits: a pattern, a number, nesting near their caps.
	f.Add([]byte(`{"properties": {"a": {"pattern": "a{1000}b{1000}"}}, "patternProperties": {"c{1000}": true}, "maximum": 1e400}`), []byte(`{"$defs": {"lang": {"pattern": "x{999}", "multipleOf": 1e-400}}}`))
	f.Fuzz(func(t *testing.T, doc, other []byte) {
		files := with(with(bundleFiles, rootKey, string(doc)), sharedKey, string(other))
		l := newLoader(files)
		q := NewQuickCheck()
		for _, k := range slices.Sorted(maps.Keys(files)) {
			id, err := q.Add(k, []byte(files[k]))
			if want, werr := SchemaID([]byte(files[k])); id != want || (err == nil) != (werr == nil) {
				t.Fatalf("%s: Add %q %v, SchemaID %q %v", k, id, err, want, werr)
			}
		}
		for _, k := range []string{rootKey, sharedKey} {
			qerr := q.Check(l, k, Options{})
			if q.NeedsCompile(k) != "" {
				if qerr != nil {
					if _, ok := qerr.(*amp.Error); !ok {
						t.Fatalf("%s: error %T %v", k, qerr, qerr)
					}
				}
				continue
			}
			if qerr != nil {
				t.Fatalf("%s: vouched for, yet an error: %v", k, qerr)
			}
			if _, err := Compile(l, k, Options{}); err != nil {
				t.Fatalf("%s: the quick check vouched for a schema Compile refuses: %v", k, err)
			}
		}
	})
}
