package a2acard

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestSecuritySchemeNamedScopesIsStillChecked: A2A-16 leaves the members
// of a flow's scopes map unread (scope names to descriptions, which may
// be named "tokenUrl"), but it skipped every member spelt "scopes" at any
// depth, value and all. securitySchemes is itself a map whose keys are
// the scheme names the card's author chooses.
//
// Attack: a hostile agent signs, with its own key, a card whose one
// security scheme is named "scopes" (or "Scopes", "s_copes": any spelling
// the fold takes for it), or whose flow hides a nested object under
// "scopes", holding a javascript: authorizationUrl, a file:
// openIdConnectUrl or a token URL with userinfo that reads as the honest
// host. Verify says "valid": a client reading securitySchemes as the map
// a2a.proto declares finds scheme "scopes" and opens, fetches or posts
// credentials to its URLs, exactly what A2A-16 refuses under any other
// scheme name.
//
// Should: card_invalid. Only the string values of a scopes map (the
// descriptions) are left unread; any other value under "scopes" is walked
// as the rest of securitySchemes is.
func TestSecuritySchemeNamedScopesIsStillChecked(t *testing.T) {
	withSchemes := func(schemes jcs.Object) jcs.Object {
		return append(unsignedVectorTree(t), jcs.Member{Name: "securitySchemes", Value: schemes})
	}
	flow := func(name string, m ...jcs.Member) jcs.Object {
		return jcs.Object{{Name: "oauth2SecurityScheme", Value: jcs.Object{{Name: "flows", Value: jcs.Object{{Name: name, Value: jcs.Object(m)}}}}}}
	}
	for _, tc := range []struct {
		name    string
		schemes jcs.Object
	}{
		{"scheme named scopes, javascript authorizationUrl", jcs.Object{{Name: "scopes", Value: flow("authorizationCode",
			jcs.Member{Name: "authorizationUrl", Value: "javascript:alert(1)"}, jcs.Member{Name: "tokenUrl", Value: "https://agent.example/token"})}}},
		{"scheme named Scopes, userinfo tokenUrl", jcs.Object{{Name: "Scopes", Value: flow("clientCredentials",
			jcs.Member{Name: "tokenUrl", Value: "https://agent.example@evil.example/token"})}}},
		{"scheme named s_copes, file openIdConnectUrl", jcs.Object{{Name: "s_copes", Value: jcs.Object{{Name: "openIdConnectSecurityScheme",
			Value: jcs.Object{{Name: "openIdConnectUrl", Value: "file:///etc/passwd"}}}}}}},
		{"scheme named scopes in the 0.3 shape, file openIdConnectUrl", jcs.Object{{Name: "scopes", Value: jcs.Object{
			{Name: "type", Value: "openIdConnect"}, {Name: "openIdConnectUrl", Value: "file:///etc/passwd"}}}}},
		{"object under a flow's scopes", jcs.Object{{Name: "oauth", Value: flow("authorizationCode",
			jcs.Member{Name: "authorizationUrl", Value: "https://agent.example/authorize"}, jcs.Member{Name: "tokenUrl", Value: "https://agent.example/token"},
			jcs.Member{Name: "scopes", Value: jcs.Object{{Name: "read", Value: jcs.Object{{Name: "tokenUrl", Value: "javascript:alert(1)"}}}}})}}},
		{"array under a flow's scopes", jcs.Object{{Name: "oauth", Value: flow("authorizationCode",
			jcs.Member{Name: "authorizationUrl", Value: "https://agent.example/authorize"}, jcs.Member{Name: "tokenUrl", Value: "https://agent.example/token"},
			jcs.Member{Name: "scopes", Value: []any{jcs.Object{{Name: "refreshUrl", Value: "file:///etc/shadow"}}}})}}},
	} {
		card := signTree(t, withSchemes(tc.schemes))
		if _, err := Verify(card, vectorPub(), ""); err == nil {
			t.Errorf("%s: verified", tc.name)
		} else {
			wantName(t, err, ErrInvalid)
		}
	}
	// A scheme named scopes with web URLs, and a flow's scopes naming a
	// scope tokenUrl, still verify.
	ok := jcs.Object{{Name: "scopes", Value: flow("authorizationCode",
		jcs.Member{Name: "authorizationUrl", Value: "https://agent.example/authorize"}, jcs.Member{Name: "tokenUrl", Value: "https://agent.example/token"},
		jcs.Member{Name: "scopes", Value: jcs.Object{{Name: "tokenUrl", Value: "read the token url"}, {Name: "read", Value: "read"}}})}}
	if _, err := Verify(signTree(t, withSchemes(ok)), vectorPub(), ""); err != nil {
		t.Fatalf("a scheme named scopes of https URLs, with a scope named tokenUrl: %v", err)
	}
}
