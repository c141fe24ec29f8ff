package jcs

import (
	"encoding/json"
	"testing"
)

// TestCaseVariantIsWhatEncodingJSONTakesForTheMember: a member CaseVariant
// passes is one a struct decoder would not take for the known member, and
// one it flags is: otherwise a signed document could still be one thing
// to exact readers and another to encoding/json (ASCII case, the Kelvin
// sign and the long s, which fold to k and s).
func TestCaseVariantIsWhatEncodingJSONTakesForTheMember(t *testing.T) {
	type known struct {
		Skills string `json:"skills"`
		URL    string `json:"url"`
	}
	for _, tc := range []struct {
		name    string
		variant bool
	}{
		{"skills", false}, {"url", false},
		{"SKILLS", true}, {"Url", true}, {"uRL", true},
		{"s\u212aills", true}, {"\u017fkills", true}, {"\u017f\u212aills", true},
		{"skill", false}, {"urls", false}, {"ur l", false}, {"s\u0130kills", false}, {"ｕｒｌ", false}, {"", false},
	} {
		var k known
		if err := json.Unmarshal([]byte(`{`+quoteName(tc.name)+`:"x"}`), &k); err != nil {
			t.Fatal(err)
		}
		taken := k.Skills == "x" || k.URL == "x"
		got := Object{{Name: tc.name, Value: "x"}}.CaseVariant("skills", "url")
		if got != tc.variant || taken != (tc.variant || tc.name == "skills" || tc.name == "url") {
			t.Errorf("%q: CaseVariant %v, encoding/json takes it %v, want variant %v", tc.name, got, taken, tc.variant)
		}
	}
}

func quoteName(s string) string { b, _ := json.Marshal(s); return string(b) }
