package amp

import "testing"

// TestJSONValueShowsAMapLikeTheItemItsEscapeNames covers
// JSONValue's promise (inspect.go) to lose "nothing that would let two
// different items look alike", on which `ampagent msg inspect`,
// `ampagent invoke` and client.Call rely to show a peer's body, ext and
// CAP_RESULT.
//
// Attack: the escapes JSONValue uses for what JSON cannot hold
// ({"bytes": HEX}, {"tag": N, "value": v}, {"float": "NaN"},
// {"simple": N}) are themselves JSON objects, and a CBOR map whose keys are
// all text renders as a plain object. So a peer sends the map
// {"bytes": "00"} where the display shows a byte string h'00' (or the map
// {"tag": 1, "value": 0} for the tag 1(0), {"float": "NaN"} for a NaN,
// {"simple": 23} for undefined): two items that Canonical keeps apart, a
// signature over one not verifying over the other, render byte for byte
// the same.
//
// Before: each pair below rendered identically.
//
// Now: a text-keyed map that could be read as an escape (a key named
// "bytes", "tag", "float", "simple" or "map", or always) is written in the
// {"map": [...]} form, or escapes get a key no object can mimic.
func TestJSONValueShowsAMapLikeTheItemItsEscapeNames(t *testing.T) {
	for _, tc := range []struct{ name, a, b string }{
		{"byte string h'00' and map {bytes: \"00\"}", "4100", "a1 656279746573 623030"},
		{"tag 1(0) and map {tag: 1, value: 0}", "c100", "a2 63746167 01 6576616c7565 00"},
		{"NaN and map {float: \"NaN\"}", "f97e00", "a1 65666c6f6174 634e614e"},
		{"undefined and map {simple: 23}", "f7", "a1 6673696d706c65 17"},
		{"map {1: 2} and map {map: [{key: 1, value: 2}]}", "a1 01 02", "a1 636d6170 81 a2 636b6579 01 6576616c7565 02"},
	} {
		t.Run(tc.name, func(t *testing.T) { renderedApart(t, hx(tc.a), hx(tc.b)) })
	}
}
