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

// FuzzCheck: no input panics Check or Decode, into a map or a struct.
func FuzzCheck(f *testing.F) {
	f.Add([]byte(`{"a": [1, {"b": "c"}]}`))
	f.Add([]byte(`{"a": 1, "a": 2}`))
	f.Add([]byte(`{"keys": [{"scopes": ["x"], "Scopes": ["*"]}], "th": {"a": 1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		_ = Check(data, 8)
		var v map[string]any
		_ = Decode(data, &v, 8)
		var s struct {
			Keys []struct {
				Scopes []string `json:"scopes"`
			} `json:"keys"`
			Th map[string]int `json:"th"`
		}
		_ = Decode(data, &s, 8) // walks the struct along the document
	})
}

// TestDecodeRefusesMemberSpeltInAnotherCase: encoding/json matches member
// names case-insensitively, so "Scopes" beside "scopes" would replace (a
// list) or merge into (a map) what a reviewer read; a spelling that differs
// from the field's JSON name only by case is refused, alone or beside the
// exact one, at any depth. Map keys stay exact: distinct keys are data.
func TestDecodeRefusesMemberSpeltInAnotherCase(t *testing.T) {
	type item struct {
		Scopes []string `json:"scopes"`
	}
	type doc struct {
		Items []item          `json:"items"`
		Th    map[string]int  `json:"thresholds"`
		Sub   *item           `json:"sub"`
		Named map[string]item `json:"named"`
	}
	tests := []struct{ name, doc, want string }{
		{"exact", `{"items":[{"scopes":["a"]}],"thresholds":{"a":1,"A":2},"sub":{"scopes":[]},"named":{"x":{"scopes":["b"]}}}`, ""},
		{"top member twice by case", `{"thresholds":{"a":3},"Thresholds":{"a":1}}`, `unknown member "Thresholds"`},
		{"top member in another case alone", `{"ITEMS":[]}`, `unknown member "ITEMS"`},
		{"member of an array item twice by case", `{"items":[{"scopes":["a"],"Scopes":["*"]}]}`, `unknown member "Scopes"`},
		{"member behind a pointer", `{"sub":{"sCopes":["*"]}}`, `unknown member "sCopes"`},
		{"member of a map value", `{"named":{"x":{"SCOPES":["*"]}}}`, `unknown member "SCOPES"`},
		{"long s folds to s in encoding/json", "{\"\u017fub\":{\"scopes\":[\"*\"]}}", `unknown member "\u017fub"`},
	}
	for _, tt := range tests {
		var v doc
		err := Decode([]byte(tt.doc), &v, 6)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.want)
		}
	}
}

// TestErrorsDoNotEchoLongOrRawMemberNames: a member name in an error is
// escaped (no control bytes reach a terminal or a log) and cut to 64 bytes,
// whichever check refuses it.
func TestErrorsDoNotEchoLongOrRawMemberNames(t *testing.T) {
	long := strings.Repeat("x", 10000)
	var v struct {
		A int `json:"a"`
	}
	tests := []struct{ name, doc string }{
		{"duplicate", `{"` + long + `":1,"` + long + `":2}`},
		{"unknown", `{"a":1,"` + long + `":2}`},
		{"control bytes", `{"a":1,"\u001b[31mred\u0007":2}`},
	}
	for _, tt := range tests {
		err := Decode([]byte(tt.doc), &v, 4)
		if err == nil {
			t.Fatalf("%s: accepted", tt.name)
		}
		msg := err.Error()
		if len(msg) > 120 || strings.ContainsAny(msg, "\x1b\x07") {
			t.Errorf("%s: error echoes the name raw or unbounded (%d bytes): %q", tt.name, len(msg), msg)
		}
	}
}
