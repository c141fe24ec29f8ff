package jcs

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzCanonical: whatever is accepted is valid JSON whose canonical form is
// a fixed point (canonicalizing it again gives the same bytes) and holds
// the same value for encoding/json.
func FuzzCanonical(f *testing.F) {
	names, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	if len(names) == 0 {
		f.Fatal("no seed files")
	}
	for _, n := range names {
		b, err := os.ReadFile(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"a":[1e-7,1E21,-0,"\u00e9\ud83d\ude00"],"":{}}`))
	f.Add([]byte(`{"a":1,"a":2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Canonical(data)
		if err != nil {
			return
		}
		if !json.Valid(out) {
			t.Fatalf("canonical form is not JSON: %q", out)
		}
		again, err := Canonical(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not a fixed point: %q -> %q (%v)", out, again, err)
		}
		var a, b any
		if json.Unmarshal(data, &a) != nil || json.Unmarshal(out, &b) != nil {
			t.Fatalf("accepted input or its form does not decode")
		}
		if !reflect.DeepEqual(a, b) { // -0 == 0 for floats
			t.Fatalf("value changed: %v vs %v", a, b)
		}
	})
}
