package jcs

import (
	"errors"
	"testing"
)

// ECMAScript Number.prototype.toString values (V8).
func TestNumbersTakeTheirECMAScriptForm(t *testing.T) {
	for in, want := range map[string]string{
		"-0": "0", "1e21": "1e+21", "-1e21": "-1e+21", "1e20": "100000000000000000000",
		"999999999999999999999": "1e+21", "5e-324": "5e-324", "-5e-324": "-5e-324",
		"1e-7": "1e-7", "0.000001": "0.000001", "9007199254740993": "9007199254740992",
		"1.7976931348623157e308": "1.7976931348623157e+308", "2.2250738585072014e-308": "2.2250738585072014e-308",
		"123456789012345680000": "123456789012345680000", "1e23": "1e+23", "0.1": "0.1",
		"4.35": "4.35", "1.0000000000000002": "1.0000000000000002", "1E400": "ERR", "1e-400": "0",
		"295147905179352830000": "295147905179352830000", "1.5e-9": "1.5e-9", "-1.2345e-7": "-1.2345e-7",
	} {
		got, err := CanonicalNumber(in)
		if want == "ERR" {
			if !errors.Is(err, ErrNumber) {
				t.Errorf("%s: %q %v", in, got, err)
			}
			continue
		}
		if err != nil || got != want {
			t.Errorf("%s: got %q %v want %q", in, got, err, want)
		}
	}
}

func TestHostileStringsAndKeysAreRefusedOrOrdered(t *testing.T) {
	for _, in := range []string{`{"a":1,"\u0061":2}`, `{"\ud83d\ude00":1,"\ud83d\ude00":2}`, `{"é":1,"\u00e9":2}`} {
		if _, err := Canonical([]byte(in)); !errors.Is(err, ErrDuplicateMember) {
			t.Errorf("%s: %v", in, err)
		}
	}
	for _, in := range []string{`"\ud800"`, `"\udc00"`, `"\ud800\u0041"`, `"\ud800\ud800"`, "\"\xed\xa0\x80\"", "\"\xff\"", `"\\\ud800"`, `"a"x`, `[1,]`, `{"a":1,}`, `01`, "\"\x1b\""} {
		if _, err := Canonical([]byte(in)); err == nil {
			t.Errorf("%q accepted", in)
		}
	}
	for in, want := range map[string]string{
		`"\\ud800"`:                           `"\\ud800"`,
		`{"\ue000":1,"\ud83d\ude00":2,"a":3}`: "{\"a\":3,\"\U0001F600\":2,\"\ue000\":1}",
		`"\u001f\u007f\u2028\/"`:              "\"\\u001f\x7f\u2028/\"",
		`[-0,0.0,1E2]`:                        `[0,0,100]`,
	} {
		got, err := Canonical([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("%s: got %s %v want %s", in, got, err, want)
		}
	}
}
