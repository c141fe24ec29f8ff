package a2acard

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestCard03EndpointThatIsNoWebAddressIsRefused: attack: a hostile agent
// signs, with its own key, a card that also carries the A2A 0.3 endpoint
// members, a top-level url or additionalInterfaces[].url, which a 1.0
// reader ignores and a 0.3 reader dials: a file: or javascript: address,
// or one whose userinfo reads as an honest host. Verify said "valid",
// checking only the 1.0 supportedInterfaces. Should: card_invalid, as
// A2A-14 refuses such a URL where a 1.0 client dials; web addresses there
// still verify.
func TestCard03EndpointThatIsNoWebAddressIsRefused(t *testing.T) {
	with := func(m ...jcs.Member) jcs.Object { return append(unsignedVectorTree(t), m...) }
	iface := func(url any) []any {
		return []any{jcs.Object{{Name: "url", Value: url}, {Name: "transport", Value: "JSONRPC"}}}
	}
	for _, tc := range []struct {
		name string
		tree jcs.Object
		ok   bool
	}{
		{"url file:", with(jcs.Member{Name: "url", Value: "file:///etc/passwd"}), false},
		{"url javascript:", with(jcs.Member{Name: "url", Value: "javascript:alert(1)"}), false},
		{"url with userinfo", with(jcs.Member{Name: "url", Value: "https://agent.example@evil.example/a2a"}), false},
		{"url not a string", with(jcs.Member{Name: "url", Value: jcs.Object{}}), false},
		{"additionalInterfaces file:", with(jcs.Member{Name: "additionalInterfaces", Value: iface("file:///etc/passwd")}), false},
		{"additionalInterfaces scheme-relative", with(jcs.Member{Name: "additionalInterfaces", Value: iface("//evil.example/a2a")}), false},
		{"https url and additionalInterfaces", with(jcs.Member{Name: "url", Value: "https://agent.example/a2a"},
			jcs.Member{Name: "additionalInterfaces", Value: iface("https://agent.example/a2a/grpc")}), true},
	} {
		_, err := Verify(signTree(t, tc.tree), vectorPub(), "")
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: verified", tc.name)
		case !tc.ok:
			wantName(t, err, ErrInvalid)
		}
	}
}
