package jcs

import (
	"encoding/json"
	"testing"
)

// TestExactStringsIsWhatTheParserReadsAsWritten: ExactStrings, the check
// that readers built on encoding/json make before they read a text that
// must read one way (docs/SPEC-DECISIONS.md JSON-1), refuses exactly the
// strings Parse refuses for replacement (a byte that is not UTF-8, a lone
// surrogate escape: encoding/json reads both as U+FFFD), follows escapes
// (an escaped backslash or quote is not the start of another escape), and
// costs no allocation however many escapes a text holds.
func TestExactStringsIsWhatTheParserReadsAsWritten(t *testing.T) {
	for _, tc := range []struct {
		text  string
		exact bool
	}{
		{`{"a":"\ud83d\ude00","b":"\u00e9\n\"\\"}`, true},
		{`["\\ud800"]`, true},       // an escaped backslash, then text
		{`["\"\ud800"]`, false},     // an escaped quote does not end the string
		{`["\\\ud800"]`, false},     // a backslash, then a lone surrogate
		{`["\ud800"]`, false},       // lone high
		{`["\udc00"]`, false},       // lone low
		{`["\uDBFF\uDFFF"]`, true},  // upper-case pair
		{`["\ud800\u0041"]`, false}, // high, then no low
		{`["\ud800\ud800"]`, false}, // high, then high
		{`"\ud800`, false},          // high at the end of the text
		{"[\"\xff\"]", false},       // not UTF-8
		{"[\"\xed\xa0\x80\"]", false},
		{`[1, "a", {"\u0024ref": "#"}]`, true},
	} {
		if got := ExactStrings([]byte(tc.text)); got != tc.exact {
			t.Errorf("ExactStrings(%s) = %v, want %v", tc.text, got, tc.exact)
		}
		_, err := Parse([]byte(tc.text), MaxDepth)
		if json.Valid([]byte(tc.text)) && (err == nil) != tc.exact {
			t.Errorf("Parse(%s) = %v, but ExactStrings is %v", tc.text, err, tc.exact)
		}
	}
	text := []byte(`["\ud83d\ude00\u0041\\\"\n\ud83d\ude00"]`)
	if n := testing.AllocsPerRun(100, func() { ExactStrings(text) }); n != 0 {
		t.Errorf("ExactStrings allocates %v times a call", n)
	}
}
