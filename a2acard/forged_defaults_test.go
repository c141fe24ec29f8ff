package a2acard

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestUnsignedWrongTypedDefaultsAreNotStripped: members added after
// signing with a "default" value of another type than the proto field's
// (false or 0 for a string, {} for a list, [] for a map) are signed
// members, so the card no longer verifies (threat: a forger adding
// members a loose reader acts on, which the verifier strips as defaults).
func TestUnsignedWrongTypedDefaultsAreNotStripped(t *testing.T) {
	card := signedVector(t)
	cases := map[string]func(jcs.Object) jcs.Object{
		"card securityRequirements {}": func(o jcs.Object) jcs.Object { return set(o, "securityRequirements", jcs.Object{}) },
		"card securitySchemes []":      func(o jcs.Object) jcs.Object { return set(o, "securitySchemes", []any{}) },
		"interface tenant false": func(o jcs.Object) jcs.Object {
			ifs := get(o, "supportedInterfaces").([]any)
			ifs[0] = set(ifs[0].(jcs.Object), "tenant", false)
			return o
		},
		"interface tenant 0": func(o jcs.Object) jcs.Object {
			ifs := get(o, "supportedInterfaces").([]any)
			ifs[0] = set(ifs[0].(jcs.Object), "tenant", json.Number("0"))
			return o
		},
	}
	for name, f := range cases {
		forged := edit(t, card, f)
		if _, err := Verify(forged, vectorPub(), ""); err == nil {
			t.Errorf("%s: unsigned, wrongly typed member accepted: %s", name, forged)
		}
	}
}

// TestTypFoldsASCIICaseOnly: typ is compared ignoring ASCII case only
// (RFC 7515 §4.1.9), so "JO\u017fE" (long s) is not JOSE (threat: a header
// that one reader takes for JOSE and another does not).
func TestTypFoldsASCIICaseOnly(t *testing.T) {
	card := signedVector(t)
	tree, _ := jcs.Parse(card, jcs.MaxDepth)
	payload, _ := payloadOf(tree.(jcs.Object))
	h := map[string]string{"alg": "EdDSA", "kid": DIDKeyID(vectorPub()), "typ": "JO\u017fE"}
	hb, _ := jcs.Marshal(jcs.Object{{Name: "alg", Value: h["alg"]}, {Name: "kid", Value: h["kid"]}, {Name: "typ", Value: h["typ"]}})
	prot := base64.RawURLEncoding.EncodeToString(hb)
	sig := ed25519.Sign(vectorKey(), signingInput(prot, payload))
	forged := edit(t, card, func(o jcs.Object) jcs.Object {
		return set(o, "signatures", []any{jcs.Object{{Name: "protected", Value: prot}, {Name: "signature", Value: base64.RawURLEncoding.EncodeToString(sig)}}})
	})
	if _, err := Verify(forged, vectorPub(), ""); err == nil {
		t.Errorf("typ %q accepted as JOSE", h["typ"])
	}
}
