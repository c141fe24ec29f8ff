package a2acard

import (
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestJKUThatIsNoHTTPSAddressIsRefused: attack: a protected header may
// carry jku, the URL of the JWK Set holding the signer's key (RFC 7515
// §4.1.2), and A2A §8.4.2 lists it for a card's signatures. Verify never
// fetches it (A2A-2), but the clients a card is for do: a JOSE library
// given the card, or an A2A SDK's key provider, dials the jku to find the
// key to check the signature with. Verify only asked jku to be a string,
// so a hostile agent's card, signed with its own key, whose jku was
// file:///etc/passwd, javascript:, a scheme-relative //evil.example, a
// userinfo URL that reads as an honest host, or plain http (which RFC
// 7515 §4.1.2 forbids: the JWK Set MUST be fetched over TLS) was
// "valid", under the verifying kid or another one. Should:
// card_signature_malformed, quoting nothing of it, unless the jku is an
// absolute https URL with a host and no userinfo; such a jku still
// verifies.
func TestJKUThatIsNoHTTPSAddressIsRefused(t *testing.T) {
	tree := unsignedVectorTree(t)
	payload, err := payloadOf(tree)
	if err != nil {
		t.Fatal(err)
	}
	sign := func(key ed25519.PrivateKey, kid, jku string) jcs.Object {
		h, _ := json.Marshal(map[string]string{"alg": Alg, "kid": kid, "typ": Typ, "jku": jku})
		p := base64.RawURLEncoding.EncodeToString(h)
		return jcs.Object{{Name: "protected", Value: p},
			{Name: "signature", Value: base64.RawURLEncoding.EncodeToString(ed25519.Sign(key, signingInput(p, payload)))}}
	}
	own := DIDKeyID(vectorPub())
	other := DIDKeyID(otherKey().Public().(ed25519.PublicKey))
	honest := sign(vectorKey(), own, "https://agent.example/.well-known/jwks.json")
	for _, tc := range []struct {
		name string
		sigs []any
		ok   bool
	}{
		{"https", []any{honest}, true},
		{"https, another kid https", []any{honest, sign(otherKey(), other, "https://rotation.example/jwks.json")}, true},
		{"file:", []any{sign(vectorKey(), own, "file:///etc/passwd")}, false},
		{"javascript:", []any{sign(vectorKey(), own, "javascript:alert(1)")}, false},
		{"scheme-relative", []any{sign(vectorKey(), own, "//evil.example/jwks.json")}, false},
		{"userinfo", []any{sign(vectorKey(), own, "https://agent.example@evil.example/jwks.json")}, false},
		{"plain http", []any{sign(vectorKey(), own, "http://agent.example/jwks.json")}, false},
		{"relative", []any{sign(vectorKey(), own, "jwks.json")}, false},
		{"empty", []any{sign(vectorKey(), own, "")}, false},
		{"another kid file:", []any{honest, sign(otherKey(), other, "file:///etc/passwd")}, false},
	} {
		card := []byte(writeTree(set(append(jcs.Object(nil), tree...), "signatures", tc.sigs)))
		_, err := Verify(card, vectorPub(), "")
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: verified", tc.name)
		case !tc.ok:
			wantName(t, err, ErrSignatureMalformed)
		}
	}
}
