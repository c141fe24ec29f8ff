package strictjson

import (
	"strings"
	"testing"
)

// replacedText is what the refusal says.
const replacedText = "not UTF-8 or holds a lone surrogate escape"

// TestContractStringsReadWithReplacementAreRefused: the attack: a contract
// document (a trust policy file, a bridge document) holds a string or a
// member name that encoding/json decodes with replacement: a byte that is
// not UTF-8, or a \u escape of a lone UTF-16 surrogate. Check and Decode
// accepted it and read U+FFFD, so the document a reviewer's tool shows (or
// refuses: Python's json.loads refuses the byte and keeps the surrogate)
// was not the one this reader applied, and two distinct member names
// ("\ud800", "\udc00") were refused as a duplicate the text did not hold. The package's promise is that a document a second reader could
// read differently is refused: it refuses these, as internal/jcs does,
// before any decoding (docs/SPEC-DECISIONS.md JSON-1).
func TestContractStringsReadWithReplacementAreRefused(t *testing.T) {
	var v struct {
		Name string         `json:"name"`
		Th   map[string]int `json:"th"`
	}
	for _, in := range []string{
		"{\"name\":\"k\xff\"}",
		"{\"th\":{\"a\xfe\":1,\"a\xff\":2}}",
		`{"name":"\ud800"}`,
		`{"name":"\udc00"}`,
		`{"name":"\ud800\u0041"}`,
		`{"th":{"\ud800":1,"\udc00":2}}`,
	} {
		if err := Check([]byte(in), 4); err == nil || !strings.Contains(err.Error(), replacedText) {
			t.Errorf("Check(%q) = %v, want %q", in, err, replacedText)
		}
		if err := Decode([]byte(in), &v, 4); err == nil || !strings.Contains(err.Error(), replacedText) {
			t.Errorf("Decode(%q) = %v, want %q", in, err, replacedText)
		}
	}
	if err := Decode([]byte(`{"name":"\ud83d\ude00\\ud800","th":{"\u00e9":1}}`), &v, 4); err != nil {
		t.Errorf("a surrogate pair and an escaped backslash refused: %v", err)
	}
}
