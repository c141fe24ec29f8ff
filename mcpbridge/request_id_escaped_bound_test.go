package mcpbridge

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestEscapedRequestIDIsBoundedByWhatItDecodesTo: the bound on a string
// id is on the id the SDK decodes and echoes, not on how it is spelt.
//
// Attack (and false refusal): MaxRequestIDBytes was checked on the text
// as written, escapes included, so an id of 43 CJK characters written as
// \uXXXX escapes (258 bytes of text, 129 bytes of UTF-8) was refused
// while the same id written in UTF-8 passed; and a bound on the decoded
// id alone would let escapes spell a token six times longer than it.
//
// Should: a string id is accepted when it decodes to at most
// MaxRequestIDBytes bytes of UTF-8 and is written in at most
// MaxRequestIDText bytes (6 per decoded byte, the longest spelling of
// any id within the bound), else invalid_request_id (MCP-35).
func TestEscapedRequestIDIsBoundedByWhatItDecodesTo(t *testing.T) {
	for _, c := range []struct {
		doc string
		id  string // the string id as written between its quotes
		ok  bool
	}{
		{"43 CJK characters escaped (129 bytes decoded)", strings.Repeat(`\u4e2d`, 43), true},
		{"85 CJK characters escaped (255 bytes decoded)", strings.Repeat(`\u4e2d`, 85), true},
		{"86 CJK characters escaped (258 bytes decoded)", strings.Repeat(`\u4e2d`, 86), false},
		{"86 CJK characters in UTF-8 (258 bytes)", strings.Repeat("中", 86), false},
		{"256 ASCII letters escaped (1536 bytes written)", strings.Repeat(`\u0041`, MaxRequestIDBytes), true},
		{"257 ASCII letters escaped", strings.Repeat(`\u0041`, MaxRequestIDBytes+1), false},
		{"64 surrogate pairs (256 bytes decoded)", strings.Repeat(`\ud83d\ude00`, 64), true},
		{"65 surrogate pairs (260 bytes decoded)", strings.Repeat(`\ud83d\ude00`, 65), false},
		{"256 escaped newlines", strings.Repeat(`\n`, MaxRequestIDBytes), true},
		{"257 escaped newlines", strings.Repeat(`\n`, MaxRequestIDBytes+1), false},
	} {
		err := checkBody([]byte(`{"jsonrpc":"2.0","id":"`+c.id+`","method":"ping"}`), 100)
		if c.ok && err != nil {
			t.Errorf("%s: refused (%v)", c.doc, err)
		}
		if !c.ok && amp.NameOf(err) != ErrInvalidRequestID {
			t.Errorf("%s: %v, want %s", c.doc, err, ErrInvalidRequestID)
		}
	}
}

// FuzzRequestIDDecodedLenMatchesTheDecoder: the length decodedLen counts
// without allocating is the length of the string encoding/json (and so
// the SDK) decodes, for every string exactString accepts.
func FuzzRequestIDDecodedLenMatchesTheDecoder(f *testing.F) {
	for _, s := range []string{`a`, `\u4e2d`, `\ud83d\ude00`, `\n\t\"\\\/`, `中`, `\u0041\u00e9\u0800`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		c := &bodyCounter{s: []byte(`"` + body + `"`)}
		if _, ok := c.str(); !ok || c.i != len(c.s) || !exactString([]byte(body)) {
			return
		}
		var s string
		if err := json.Unmarshal(c.s, &s); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if got := decodedLen([]byte(body)); got != len(s) {
			t.Fatalf("%q: decodedLen %d, decoded %d bytes", body, got, len(s))
		}
	})
}
