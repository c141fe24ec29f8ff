package jcs

import (
	"encoding/json"
	"testing"
)

// TestSpellingVariantCoversWhatEncodingJSONTakesForTheMember: a member
// Spellings.Variant passes is one a struct decoder would not take for the
// known member, and every case variant encoding/json takes for it is
// flagged: otherwise a signed document could still be one thing to exact
// readers and another to encoding/json (ASCII case, the Kelvin sign and
// the long s, which fold to k and s).
func TestSpellingVariantCoversWhatEncodingJSONTakesForTheMember(t *testing.T) {
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
		got := NewSpellings("skills", "url").Variant(Object{{Name: tc.name, Value: "x"}})
		if got != tc.variant || taken != (tc.variant || tc.name == "skills" || tc.name == "url") {
			t.Errorf("%q: Variant %v, encoding/json takes it %v, want variant %v", tc.name, got, taken, tc.variant)
		}
	}
}

func quoteName(s string) string { b, _ := json.Marshal(s); return string(b) }

// TestSpellingVariantIsEveryNameAFoldingReaderTakesForTheMember: Variant
// flags every name encoding/json (Unicode simple folding), protojson (the
// proto field name beside the JSON name) or encoding/json/v2 matching
// names case-insensitively (folding, '_' and '-' left out) takes for a
// known member without being it, and nothing a reader keeps apart
// (fullwidth letters, a dotless or dotted I, a name one letter off);
// Spelt flags the same names and the known names themselves.
func TestSpellingVariantIsEveryNameAFoldingReaderTakesForTheMember(t *testing.T) {
	sp := NewSpellings("expires_at", "supportedInterfaces")
	for _, tc := range []struct {
		name    string
		variant bool
	}{
		{"expires_at", false}, {"supportedInterfaces", false},
		{"EXPIRES_AT", true}, {"expiresAt", true}, {"expires-at", true}, {"Expires__At", true},
		{"e-x-p-i-r-e-s-a-t", true}, {"expire\u017f_at", true}, {"supported_interfaces", true},
		{"supported-interfaces", true}, {"SUPPORTEDINTERFACE\u017f", true},
		{"expires", false}, {"expires_at_", true}, {"expires.at", false}, {"expires at", false},
		{"ｅｘｐｉｒｅｓ＿ａｔ", false}, {"supported\u0130nterfaces", false}, {"supported\u0131nterfaces", false},
		{"", false}, {"_", false}, {"-", false},
	} {
		if got := sp.Variant(Object{{Name: tc.name, Value: "x"}}); got != tc.variant {
			t.Errorf("%q: Variant %v, want %v", tc.name, got, tc.variant)
		}
		exact := tc.name == "expires_at" || tc.name == "supportedInterfaces"
		if got := sp.Spelt(tc.name); got != (tc.variant || exact) {
			t.Errorf("%q: Spelt %v, want %v", tc.name, got, tc.variant || exact)
		}
		var known struct {
			ExpiresAt string `json:"expires_at"`
			Supported string `json:"supportedInterfaces"`
		}
		if err := json.Unmarshal([]byte(`{`+quoteName(tc.name)+`:"x"}`), &known); err != nil {
			t.Fatal(err)
		}
		if taken := known.ExpiresAt == "x" || known.Supported == "x"; taken && !exact && !tc.variant {
			t.Errorf("%q: encoding/json takes it for a known member, Variant passes it", tc.name)
		}
	}
}
