package offlineschema

import (
	"bytes"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestLoneSurrogateArgumentsAreRefusedNotReplaced: the attack: MCP
// arguments, --params or a handler program's result carry a \u escape of
// a UTF-16 surrogate that is not half of a high-low pair ("\ud800").
// ValueFromJSON read it through encoding/json, which replaces it with
// U+FFFD: "\ud800", "\udbff" and "\ufffd" became one value and one
// CBOR params item (the handler ran on a text the host never sent), and two
// distinct keys "\ud800" and "\udc00" were refused as a duplicate the
// text did not hold. The CBOR side cannot carry such a string at all,
// and internal/jcs (RFC 8785 needs I-JSON, RFC 7493 §2.1) refuses it.
// It is invalid_json (code 0), as a byte that is not UTF-8 is
// (docs/SPEC-DECISIONS.md JSON-1); a surrogate pair and an escaped
// backslash before "ud800" stay accepted.
func TestLoneSurrogateArgumentsAreRefusedNotReplaced(t *testing.T) {
	for _, in := range []string{
		`{"a":"\ud800"}`,          // lone high
		`{"a":"\udbff"}`,          // another lone high: the same value once replaced
		`{"a":"\udc00x"}`,         // lone low
		`{"a":"\ud800\u0041"}`,    // high followed by a non-surrogate escape
		`{"a":"\ud800\ud800"}`,    // high followed by a high
		`["x\ud800"]`,             // high at the end of a string
		`{"\ud800":1,"\udc00":2}`, // two keys, one name after replacement
		`"\uDFFF"`,                // upper-case hex
	} {
		v, err := ValueFromJSON([]byte(in))
		if err == nil {
			c, _ := ToCBOR(v)
			same, _ := ToCBOR(map[string]any{"a": "\ufffd"})
			t.Errorf("%s: accepted as %q (params identical to \"\\ufffd\": %v)", in, v, bytes.Equal(c, same))
			continue
		}
		if amp.NameOf(err) != ErrInvalidJSON || amp.AsError(err).Code != 0 {
			t.Errorf("%s: refused as %v, want %s", in, err, ErrInvalidJSON)
		}
	}
	for _, in := range []string{`{"a":"\ud83d\ude00"}`, `{"a":"\\ud800"}`, `{"a":"\ufffd"}`} {
		if _, err := ValueFromJSON([]byte(in)); err != nil {
			t.Errorf("%s: refused: %v", in, err)
		}
	}
}
