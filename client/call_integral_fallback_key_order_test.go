package client

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// scriptedCall answers every call with the CBOR result item and decodes it
// with Call into Out.
func scriptedCall[Out any](t *testing.T, result []byte) (Out, error) {
	t.Helper()
	p := newParties(t)
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		body, err := capability.Result{Status: capability.StatusSuccess, Result: result}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapResult, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	return Call[Out](context.Background(), p.client(t, tr), "org.example.count:1.0.0", map[string]any{})
}

// TestIntegralFallbackReordersCaseFoldedKeys covers a provider
// steering which of two member names encoding/json picks for one field.
//
// Attack: the result {"n": 1.0, "ſk": 1, "sK": 2} (CBOR deterministic
// order: shorter encoded key first). encoding/json matches member names
// to fields case-insensitively with Unicode folding, so both "ſk" (U+017F)
// and "sK" (U+212A KELVIN SIGN) name the field `sk`, and the last one in
// the text wins: decoding the JSONValue view with 1.0 read as 1 gives
// sk = 2.
//
// Before: the 1.0 made the first decode fail; integralFloats decoded the
// whole view into map[string]any and json.Marshal wrote it back with
// keys sorted bytewise ("sK" before "ſk"), so the retry picked sk = 1: the
// fallback changed which member a field takes, not just how 1.0 is written.
//
// Now: the retry decodes the same text with only the integral float
// tokens rewritten in place (member order, escapes and everything else
// byte for byte as JSONValue wrote it), so sk = 2 as for any other result.
func TestIntegralFallbackReordersCaseFoldedKeys(t *testing.T) {
	result := []byte{0xa3,
		0x61, 'n', 0xf9, 0x3c, 0x00, // "n": 1.0
		0x63, 0xc5, 0xbf, 'k', 0x01, // "ſk": 1
		0x64, 's', 0xe2, 0x84, 0xaa, 0x02, // "sK": 2
	}
	type out struct {
		N  int `json:"n"`
		SK int `json:"sk"`
	}
	// The reference: the same view with the float written as an integer.
	var want out
	if err := json.Unmarshal([]byte(`{"n":1,"ſk":1,"sK":2}`), &want); err != nil || want.SK != 2 {
		t.Fatalf("reference decode: %+v, %v", want, err)
	}
	got, err := scriptedCall[out](t, result)
	if err != nil {
		t.Fatalf("Call: %v", err)
	}
	if got != want {
		t.Fatalf("Call decoded %+v; the view with 1.0 read as 1 decodes to %+v (the fallback re-sorted the members)", got, want)
	}
}
