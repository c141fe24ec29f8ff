package strictjson

import (
	"strings"
	"testing"
)

// TestCheckRefusesAmbiguousDocuments: a document a second reader could
// read differently (a duplicate member, trailing data) or that costs
// unbounded work (nesting) is refused; a plain document passes.
func TestCheckRefusesAmbiguousDocuments(t *testing.T) {
	tests := []struct {
		name, doc, want string // want "" for accepted
	}{
		{"plain", `{"a": [1, {"b": "c"}], "d": null}`, ""},
		{"duplicate member", `{"a": 1, "a": 2}`, "duplicate member"},
		{"duplicate nested member", `{"x": {"a": 1, "b": 2, "a": 3}}`, "duplicate member"},
		{"same member in sibling objects", `[{"a": 1}, {"a": 2}]`, ""},
		{"trailing data", `{} {}`, "trailing data"},
		{"too deep", strings.Repeat("[", 5) + strings.Repeat("]", 5), "nested deeper"},
		{"not JSON", `{"a": }`, "not valid JSON"},
	}
	for _, tt := range tests {
		err := Check([]byte(tt.doc), 4)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestDecodeRefusesUnknownMembers: a member the reader does not know is
// refused rather than ignored, and a wrong type is named by its member.
func TestDecodeRefusesUnknownMembers(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	tests := []struct{ doc, want string }{
		{`{"a": 1}`, ""},
		{`{"a": 1, "b": 2}`, "unknown member"},
		{`{"a": "x"}`, `member "a" has the wrong type`},
	}
	for _, tt := range tests {
		err := Decode([]byte(tt.doc), &v, 4)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want %q", tt.doc, err, tt.want)
		}
	}
}

// FuzzCheck: no input panics Check or Decode.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a": [1, {"b": "c"}]}`))
	f.Add([]byte(`{"a": 1, "a": 2}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Check(data, 8)
		var v map[string]any
		_ = Decode(data, &v, 8)
	})
}
