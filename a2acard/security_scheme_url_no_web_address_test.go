package a2acard

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestSecuritySchemeURLThatIsNoWebAddressIsRefused: A2A-14 checks
// the URLs a client dials or links (interfaces, provider, documentation,
// icon) but not those of securitySchemes, which it handles as opaque: an
// OAuth 2.0 flow's authorizationUrl is opened in the user's browser, its
// tokenUrl and refreshUrl receive the client's credentials, and
// oauth2MetadataUrl, openIdConnectUrl and a device flow's
// deviceAuthorizationUrl are fetched before any of that (a2a.proto
// OAuth2SecurityScheme, OAuthFlows, OpenIdConnectSecurityScheme).
//
// Attack: a hostile agent signs, with its own key, a card whose
// authorization code flow's authorizationUrl is javascript:, whose
// openIdConnectUrl is file:///etc/passwd, or whose token URL carries
// userinfo that reads as the honest host, spelt as protojson also reads
// it (token_url). Verify says "valid", and a client that trusts a
// verified card opens, fetches or posts credentials to it: the class of
// URL A2A-14 refuses elsewhere.
//
// Before A2A-16: every case verified.
//
// Should: card_invalid, as for the other URL members: every member of
// securitySchemes named (in any spelling A2A-12 folds) like one of those
// URL fields must be an absolute http or https URL with a host and no
// userinfo; the scopes maps (names to descriptions) are not URLs.
func TestSecuritySchemeURLThatIsNoWebAddressIsRefused(t *testing.T) {
	withSchemes := func(schemes jcs.Object) jcs.Object {
		return append(unsignedVectorTree(t), jcs.Member{Name: "securitySchemes", Value: schemes})
	}
	oauth := func(flow string, m ...jcs.Member) jcs.Object {
		return jcs.Object{{Name: "oauth", Value: jcs.Object{{Name: "oauth2SecurityScheme", Value: jcs.Object{
			{Name: "flows", Value: jcs.Object{{Name: flow, Value: append(jcs.Object{{Name: "scopes", Value: jcs.Object{{Name: "tokenUrl", Value: "read the token url"}}}}, m...)}}}}}}}}
	}
	for _, tc := range []struct {
		name    string
		schemes jcs.Object
	}{
		{"javascript authorizationUrl", oauth("authorizationCode", jcs.Member{Name: "authorizationUrl", Value: "javascript:alert(1)"}, jcs.Member{Name: "tokenUrl", Value: "https://agent.example/token"})},
		{"userinfo token_url", oauth("clientCredentials", jcs.Member{Name: "token_url", Value: "https://agent.example@evil.example/token"})},
		{"file deviceAuthorizationUrl", oauth("deviceCode", jcs.Member{Name: "deviceAuthorizationUrl", Value: "file:///etc/passwd"}, jcs.Member{Name: "tokenUrl", Value: "https://agent.example/token"})},
		{"file openIdConnectUrl", jcs.Object{{Name: "oidc", Value: jcs.Object{{Name: "openIdConnectSecurityScheme", Value: jcs.Object{{Name: "openIdConnectUrl", Value: "file:///etc/passwd"}}}}}}},
		{"scheme-relative oauth2MetadataUrl", jcs.Object{{Name: "oauth", Value: jcs.Object{{Name: "oauth2SecurityScheme", Value: jcs.Object{{Name: "oauth2MetadataUrl", Value: "//evil.example/.well-known/oauth-authorization-server"}}}}}}},
	} {
		card := signTree(t, withSchemes(tc.schemes))
		if _, err := Verify(card, vectorPub(), ""); err == nil {
			t.Errorf("%s: verified", tc.name)
		} else {
			wantName(t, err, ErrInvalid)
		}
	}
	ok := oauth("authorizationCode", jcs.Member{Name: "authorizationUrl", Value: "https://agent.example/authorize"}, jcs.Member{Name: "tokenUrl", Value: "https://agent.example/token"}, jcs.Member{Name: "refreshUrl", Value: ""})
	ok = append(ok, jcs.Member{Name: "tokenUrl", Value: jcs.Object{{Name: "httpAuthSecurityScheme", Value: jcs.Object{{Name: "scheme", Value: "Bearer"}}}}})
	if _, err := Verify(signTree(t, withSchemes(ok)), vectorPub(), ""); err != nil {
		t.Fatalf("an oauth2 scheme of https URLs, an unset refreshUrl, a scope and a scheme named tokenUrl: %v", err)
	}
}
