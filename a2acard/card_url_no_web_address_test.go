package a2acard

import (
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestCardURLThatIsNoWebAddressIsRefused: the card's URLs are what
// a client dials (supportedInterfaces[].url) and what a UI links to or
// fetches (provider.url, documentationUrl, iconUrl).
//
// Attack: a hostile agent signs, with its own key, a card whose interface
// url is file:///etc/passwd, a userinfo address that reads as the honest
// host (https://agent.example@evil.example/amp), a scheme-relative
// //evil.example, or javascript:; or whose documentationUrl is
// javascript:. Verify says "valid" and a client that trusts a verified
// card dials or links it; `ampagent card --a2a` itself never writes such
// a url (it requires an absolute http or https URL).
//
// Before A2A-14: every case verified.
//
// Should: card_invalid for a URL member that is not an absolute http or
// https URL with a host and without userinfo; the refusal quotes nothing
// of the URL.
func TestCardURLThatIsNoWebAddressIsRefused(t *testing.T) {
	ifaceURL := func(u string) func(jcs.Object) jcs.Object {
		return func(o jcs.Object) jcs.Object {
			i := append(jcs.Object{}, get(o, "supportedInterfaces").([]any)[0].(jcs.Object)...)
			return set(o, "supportedInterfaces", []any{set(i, "url", u)})
		}
	}
	for _, tc := range []struct {
		name string
		f    func(jcs.Object) jcs.Object
	}{
		{"file interface", ifaceURL("file:///etc/passwd")},
		{"userinfo interface", ifaceURL("https://agent.example@evil.example/amp")},
		{"scheme-relative interface", ifaceURL("//evil.example/amp")},
		{"javascript interface", ifaceURL("javascript:alert(1)")},
		{"no host", ifaceURL("https:///amp")},
		{"javascript documentationUrl", func(o jcs.Object) jcs.Object {
			return append(o, jcs.Member{Name: "documentationUrl", Value: "javascript:alert(document.cookie)"})
		}},
		{"gopher provider", func(o jcs.Object) jcs.Object {
			return append(o, jcs.Member{Name: "provider", Value: jcs.Object{{Name: "url", Value: "gopher://evil.example:25/"}, {Name: "organization", Value: "x"}}})
		}},
		{"file iconUrl", func(o jcs.Object) jcs.Object {
			return append(o, jcs.Member{Name: "iconUrl", Value: "file:///dev/zero"})
		}},
	} {
		card := signTree(t, tc.f(unsignedVectorTree(t)))
		_, err := Verify(card, vectorPub(), "")
		if err == nil {
			t.Errorf("%s: verified", tc.name)
			continue
		}
		if strings.Contains(err.Error(), "evil") || strings.Contains(err.Error(), "passwd") {
			t.Errorf("%s: the refusal quotes the url: %v", tc.name, err)
		}
		wantName(t, err, ErrInvalid)
	}
	ok := signTree(t, ifaceURL("http://127.0.0.1:8080/amp")(unsignedVectorTree(t)))
	if _, err := Verify(ok, vectorPub(), ""); err != nil {
		t.Fatalf("a plain http interface: %v", err)
	}
}
