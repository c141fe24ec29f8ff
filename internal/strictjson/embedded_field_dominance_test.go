package strictjson

import (
	"encoding/json"
	"strings"
	"testing"
)

// The types below hold one JSON name, "x", twice: once two embeddings
// down (deepX, reached first in field order) and once one down
// (shallowX). encoding/json decodes "x" into the shallower field: of
// several fields with one name, the least nested dominates (the rules of
// encoding/json's Marshal documentation, which Unmarshal follows).
type deepX struct {
	X any `json:"x"`
}

type midX struct{ deepX }

type inner struct {
	Y int `json:"y"`
}

type shallowX struct {
	X inner `json:"x"`
}

type dominated struct {
	midX
	shallowX
}

// TestCaseVariantUnderAShallowerEmbeddedFieldIsRefused: a member spelt in
// another case than its field's JSON name is refused wherever the
// decoder puts it, also under a field that dominates a deeper embedded
// field of the same name. The walk that checks names used to follow the
// field met first ("x" as any, whose members it never looks at), while
// encoding/json decodes into the shallower one and takes "Y" for "y".
func TestCaseVariantUnderAShallowerEmbeddedFieldIsRefused(t *testing.T) {
	// The premise: encoding/json itself takes the case variant.
	var plain dominated
	if err := json.Unmarshal([]byte(`{"x":{"Y":7}}`), &plain); err != nil || plain.shallowX.X.Y != 7 {
		t.Fatalf("encoding/json premise: %v, %+v", err, plain)
	}
	tests := []struct{ doc, want string }{
		{`{"x":{"y":7}}`, ""},
		{`{"x":{"Y":7}}`, `unknown member "Y"`},
		{`{"x":{"y":7,"Y":8}}`, `unknown member "Y"`},
		{`{"X":{"y":7}}`, `unknown member "X"`},
	}
	for _, tt := range tests {
		var v dominated
		err := Decode([]byte(tt.doc), &v, 8)
		if tt.want == "" && err != nil || tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%s: got %v (decoded %+v), want %q", tt.doc, err, v, tt.want)
		}
	}
}
