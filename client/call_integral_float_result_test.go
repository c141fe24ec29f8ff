package client

import (
	"context"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestCallRefusesAnIntegralFloatThatJSONSchemaCallsAnInteger
// covers a valid result refused by client.Call since review 52 (AMP-16).
//
// Attack (interoperability, no forgery needed): a provider written in a
// language whose numbers are doubles (JavaScript, or Python returning
// 1.0) answers a capability whose output schema says
// {"n": {"type": "integer"}} with the CBOR float 1.0 (f93c00). JSON Schema
// (draft 6 on; 2020-12 validation §6.1.1: "integer" matches any number
// with a zero fractional part) calls 1.0 an integer, so the result meets
// the declared contract, and before review 52 Call decoded it.
//
// Today: JSONValue writes it as `1.0`, encoding/json refuses `1.0` for an
// int field, and Call answers 4004 result_type_mismatch for a result that
// is valid under the capability's own schema.
//
// Should: Call decodes a float with a zero fractional part into an integer
// field (e.g. decode through a JSON view that writes integral floats in
// range as plain numbers, keeping AMP-16's `1.0` for display only).
func TestCallRefusesAnIntegralFloatThatJSONSchemaCallsAnInteger(t *testing.T) {
	p := newParties(t)
	tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
		// {"n": 1.0} with n a float, as a double-only provider writes it.
		body, err := capability.Result{Status: capability.StatusSuccess, Result: []byte{0xa1, 0x61, 0x6e, 0xf9, 0x3c, 0x00}}.Encode()
		if err != nil {
			return nil, err
		}
		_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapResult, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
		return out, err
	})
	type out struct {
		N int `json:"n"`
	}
	got, err := Call[out](context.Background(), p.client(t, tr), "org.example.count:1.0.0", map[string]any{})
	if err != nil {
		t.Fatalf("a result of 1.0 for an integer field (valid under JSON Schema's integer): %v", err)
	}
	if got.N != 1 {
		t.Fatalf("n = %d, want 1", got.N)
	}
}
