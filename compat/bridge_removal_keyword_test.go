package compat

import (
	"encoding/json"
	"testing"
)

// TestBridgeRemovalThatAKeywordForbidsIsRefused: the output bridge runs
// after the provider's result is validated and its result is not
// validated again against the caller's output schema (docs/SPEC-DECISIONS.md
// COMPAT-7), so CheckBridge is what keeps a removal from breaking it. The
// walk knew "required" and a list of keywords it gave up on, but the
// offline validator (jsonschema v5.3.1, also in a draft 2020-12 document)
// makes a member required, or its removal invalid, through more: each
// case below is a result valid for the caller's schema that the bridge
// makes invalid, and CheckBridge passed it.
func TestBridgeRemovalThatAKeywordForbidsIsRefused(t *testing.T) {
	for _, tc := range []struct{ name, schema, op, result string }{
		{"dependencies, names", `{"type":"object","properties":{"a":{},"b":{}},"dependencies":{"a":["b"]}}`,
			`{"op":"drop-optional","path":"/b"}`, `{"a":1,"b":2}`},
		{"dependencies, schema", `{"type":"object","properties":{"a":{},"b":{}},"dependencies":{"a":{"required":["b"]}}}`,
			`{"op":"rename","from":"/b","to":"/c"}`, `{"a":1,"b":2}`},
		{"$recursiveRef", `{"type":"object","properties":{"o":{"$recursiveRef":"#/$defs/o"}},"$defs":{"o":{"required":["k"]}}}`,
			`{"op":"drop-optional","path":"/o/k"}`, `{"o":{"k":1}}`},
		{"patternProperties next to the listed property", `{"type":"object","properties":{"o":{"type":"object"}},"patternProperties":{"^o$":{"required":["k"]}}}`,
			`{"op":"move","from":"/o/k","to":"/k"}`, `{"o":{"k":1}}`},
		{"minProperties on the parent", `{"type":"object","properties":{"a":{}},"minProperties":1}`,
			`{"op":"drop-optional","path":"/a"}`, `{"a":1}`},
		{"const on the way", `{"type":"object","properties":{"o":{"const":{"k":1}}}}`,
			`{"op":"drop-optional","path":"/o/k"}`, `{"o":{"k":1}}`},
		{"enum at the root", `{"enum":[{"k":1}]}`,
			`{"op":"drop-optional","path":"/k"}`, `{"k":1}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{"out.json": tc.schema}
			b, err := ParseBridge([]byte(`{"bridge":1,"output":[` + tc.op + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			// The threat is real: valid for the caller before the bridge,
			// refused after it.
			bridged, err := b.ApplyOutput(mustJSON(t, tc.result))
			if err != nil {
				t.Fatal(err)
			}
			after, _ := json.Marshal(bridged)
			if validatorRefuses(t, files, "out.json", tc.result) || !validatorRefuses(t, files, "out.json", string(after)) {
				t.Fatalf("the validator does not refuse %s (bridged from %s) alone", after, tc.result)
			}
			l := memLoader{files: map[string][]byte{"out.json": []byte(tc.schema), "in.json": []byte(`{}`)}}
			err = CheckBridge(b, Schema{Loader: l, Key: "in.json"}, Schema{Loader: l, Key: "out.json"})
			if errName(err) != ErrBridgeDropsRequired {
				t.Fatalf("err = %v, want %s", err, ErrBridgeDropsRequired)
			}
		})
	}
}

// TestBridgeRemovalBesideHarmlessKeywordsIsAccepted: the keywords above
// refuse only where they can break the removal; a pattern on the removed
// member's own parent (it no longer applies to a member that is gone) and
// a minProperties above the parent (its member count is unchanged) do not.
func TestBridgeRemovalBesideHarmlessKeywordsIsAccepted(t *testing.T) {
	for _, tc := range []struct{ name, schema, op string }{
		{"patternProperties on the parent", `{"type":"object","patternProperties":{"^x":{"type":"string"}},"properties":{"a":{}}}`,
			`{"op":"drop-optional","path":"/a"}`},
		{"minProperties above the parent", `{"type":"object","minProperties":1,"properties":{"o":{"type":"object","properties":{"k":{}}}}}`,
			`{"op":"drop-optional","path":"/o/k"}`},
		{"required elsewhere", `{"type":"object","required":["b"],"properties":{"a":{},"b":{}}}`,
			`{"op":"rename","from":"/a","to":"/c"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := ParseBridge([]byte(`{"bridge":1,"output":[` + tc.op + `]}`))
			if err != nil {
				t.Fatal(err)
			}
			l := memLoader{files: map[string][]byte{"out.json": []byte(tc.schema), "in.json": []byte(`{}`)}}
			if err := CheckBridge(b, Schema{Loader: l, Key: "in.json"}, Schema{Loader: l, Key: "out.json"}); err != nil {
				t.Fatalf("refused a safe bridge: %v", err)
			}
		})
	}
}
