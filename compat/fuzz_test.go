package compat

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzSubsumes feeds arbitrary bytes as the two schemas (publisher input):
// the checker must never panic, must give one of the three verdicts, must
// be deterministic, and must never call a schema compatible with false.
func FuzzSubsumes(f *testing.F) {
	for _, v := range readVectors(f) {
		f.Add([]byte(v.Old["schema.json"]), []byte(v.New["schema.json"]))
	}
	f.Add([]byte(`{"$ref":"#"}`), []byte(`{"allOf":[{"$ref":"#"}]}`))
	f.Add([]byte(`{"anyOf":[{"anyOf":[{"$ref":"#"}]}]}`), []byte(`{"oneOf":[{"$ref":"#"},true]}`))
	f.Add([]byte(`{"type":"number","multipleOf":1e-9999}`), []byte(`{"minimum":1e99999}`))
	f.Fuzz(func(t *testing.T, a, b []byte) {
		la := memLoader{files: map[string][]byte{"schema.json": a}}
		lb := memLoader{files: map[string][]byte{"schema.json": b, "false.json": []byte("false")}}
		r1 := Subsumes(NewSource(la), "schema.json", NewSource(lb), "schema.json")
		r2 := Subsumes(NewSource(la), "schema.json", NewSource(lb), "schema.json")
		if !reflect.DeepEqual(r1, r2) {
			t.Fatalf("two runs differ: %+v / %+v", r1, r2)
		}
		switch r1.Verdict {
		case Compatible, Incompatible, Unknown:
		default:
			t.Fatalf("verdict %q", r1.Verdict)
		}
		if (r1.Verdict == Compatible) != (len(r1.Findings) == 0) {
			t.Fatalf("verdict %s with %d findings", r1.Verdict, len(r1.Findings))
		}
		if _, err := json.Marshal(r1); err != nil {
			t.Fatal(err)
		}
		// The schema that accepts everything is not contained in false.
		var v any
		_ = json.Unmarshal(a, &v)
		if m, ok := v.(map[string]any); v == true || (ok && len(m) == 0) {
			if r := Subsumes(NewSource(la), "schema.json", NewSource(lb), "false.json"); r.Verdict == Compatible {
				t.Fatalf("%q called compatible with false", a)
			}
		}
	})
}

// FuzzParseBridge: a publisher's bridge document never panics the parser,
// and whatever parses applies to any object without panicking, leaving the
// input unchanged.
func FuzzParseBridge(f *testing.F) {
	if seed, err := os.ReadFile(filepath.Join("..", "testdata", "compat", "bridge", "example.json")); err == nil {
		f.Add(seed)
	}
	f.Add([]byte(`{"bridge":1,"input":[{"op":"move","from":"/a","to":"/b/c"}]}`))
	f.Add([]byte(`{"bridge":1,"output":[{"op":"default","path":"/a~1b","value":[{}]}]}`))
	f.Add([]byte(`{"bridge":1,"bridge":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := ParseBridge(data)
		if err != nil {
			return
		}
		in := map[string]any{"a": map[string]any{"b": 1.0}, "text": "x", "lang": "de"}
		if _, err := b.ApplyInput(in); err != nil && errName(err) != ErrBridgeConflict {
			t.Fatalf("apply error %v", err)
		}
		if _, err := b.ApplyOutput(in); err != nil && errName(err) != ErrBridgeConflict {
			t.Fatalf("apply error %v", err)
		}
		if len(in) != 3 {
			t.Fatal("input modified")
		}
	})
}
