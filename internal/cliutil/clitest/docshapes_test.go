package clitest

import (
	"encoding/json"
	"testing"
)

// TestShapeMatcherCatchesDrift: the matcher behind the programs' CLI
// contract tests must report a dropped, added, retyped or renamed key (else
// the doc and the code could drift apart with every test green), and
// accept what the doc's conventions allow (an optional key absent, any key
// of a map, any value for "JSON").
func TestShapeMatcherCatchesDrift(t *testing.T) {
	doc := map[string]any{"a": "x", "b?": 1.0, "m": map[string]any{"K": true}, "l": []any{map[string]any{"c": "y"}}, "j": "JSON"}
	for _, tc := range []struct {
		name, got string
		bad       bool
	}{
		{"as documented", `{"a":"s","b":2,"m":{"p":false,"q":true},"l":[{"c":"z"}],"j":[1]}`, false},
		{"an optional key absent", `{"a":"s","m":{},"l":[],"j":null}`, false},
		{"a documented key dropped", `{"m":{},"l":[],"j":1}`, true},
		{"an undocumented key", `{"a":"s","m":{},"l":[],"j":1,"new":1}`, true},
		{"a type changed", `{"a":1,"m":{},"l":[],"j":1}`, true},
		{"a map value retyped", `{"a":"s","m":{"p":"no"},"l":[],"j":1}`, true},
		{"an element key renamed", `{"a":"s","m":{},"l":[{"C":"z"}],"j":1}`, true},
	} {
		var got any
		if err := json.Unmarshal([]byte(tc.got), &got); err != nil {
			t.Fatal(err)
		}
		var errs []string
		MatchShape("$", doc, got, nil, map[string]bool{}, &errs)
		if (len(errs) > 0) != tc.bad {
			t.Errorf("%s: errors %q, want errors: %v", tc.name, errs, tc.bad)
		}
	}
}
