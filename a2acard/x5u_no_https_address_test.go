package a2acard

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestX5UThatIsNoHTTPSAddressIsRefused: attack: x5u names the URL of the
// X.509 certificate (chain) of the key that signed a JWS (RFC 7515
// §4.1.5), and, as for jku (§4.1.2, A2A-20), its retrieval MUST use TLS
// with the server's identity validated. Verify refuses a protected x5u
// under the verifying kid (a parameter it does not implement), but an
// entry under another kid is checked for form only (A2A-3), and anyone
// relaying a card can add one: a card whose second entry carried an x5u
// of file:///etc/passwd, javascript:, a scheme-relative //evil.example,
// a userinfo URL that reads as an honest host, plain http, a relative
// path or "" was "valid", and a client checking that entry dials it.
// A2A-20 checked jku in every entry for that reason and left x5u out.
// Should: card_signature_malformed, quoting nothing of it, in every
// entry, unless x5u is an absolute https URL with a host and no
// userinfo; such an x5u under another kid still verifies, and under the
// verifying kid is card_header_unsupported as before.
func TestX5UThatIsNoHTTPSAddressIsRefused(t *testing.T) {
	tree := unsignedVectorTree(t)
	payload, err := payloadOf(tree)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(key ed25519.PrivateKey, kid string, x5u any) jcs.Object {
		hdr := map[string]any{"alg": Alg, "kid": kid, "typ": Typ}
		if x5u != nil {
			hdr["x5u"] = x5u
		}
		h, _ := json.Marshal(hdr)
		p := base64.RawURLEncoding.EncodeToString(h)
		return jcs.Object{{Name: "protected", Value: p},
			{Name: "signature", Value: base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, signingInput(p, payload)))}}
	}
	own := DIDKeyID(vectorPub())
	other := DIDKeyID(otherKey().Public().(ed25519.PublicKey))
	honest := sign(vectorKey(), own, nil)
	for _, tc := range []struct {
		name string
		sigs []any
		want amp.ErrName // "" verifies
	}{
		{"another kid, https", []any{honest, sign(otherKey(), other, "https://rotation.example/cert.pem")}, ""},
		{"another kid, file:", []any{honest, sign(otherKey(), other, "file:///etc/passwd")}, ErrSignatureMalformed},
		{"another kid, javascript:", []any{honest, sign(otherKey(), other, "javascript:alert(1)")}, ErrSignatureMalformed},
		{"another kid, scheme-relative", []any{honest, sign(otherKey(), other, "//evil.example/cert.pem")}, ErrSignatureMalformed},
		{"another kid, userinfo", []any{honest, sign(otherKey(), other, "https://agent.example@evil.example/cert.pem")}, ErrSignatureMalformed},
		{"another kid, plain http", []any{honest, sign(otherKey(), other, "http://agent.example/cert.pem")}, ErrSignatureMalformed},
		{"another kid, relative", []any{honest, sign(otherKey(), other, "cert.pem")}, ErrSignatureMalformed},
		{"another kid, empty", []any{honest, sign(otherKey(), other, "")}, ErrSignatureMalformed},
		{"another kid, not a string", []any{honest, sign(otherKey(), other, 1)}, ErrSignatureMalformed},
		{"the verifying kid, https", []any{sign(vectorKey(), own, "https://agent.example/cert.pem")}, ErrHeaderUnsupported},
		{"the verifying kid, file:", []any{sign(vectorKey(), own, "file:///etc/passwd")}, ErrSignatureMalformed},
	} {
		card := []byte(writeTree(set(append(jcs.Object(nil), tree...), "signatures", tc.sigs)))
		_, err := Verify(card, vectorPub(), "")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && err == nil:
			t.Errorf("%s: verified", tc.name)
		case tc.want != "" && amp.NameOf(err) != tc.want:
			t.Errorf("%s: %v, want %s", tc.name, err, tc.want)
		}
	}
}
