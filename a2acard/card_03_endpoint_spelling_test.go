package a2acard

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestCard03EndpointSpeltOtherwiseIsRefused: attack: A2A-18 checks the
// A2A 0.3 endpoint members, a top-level url and additionalInterfaces[].url,
// by their exact names, but a 0.3 reader finds them in other spellings
// too: encoding/json decoding into a struct field tagged "url" or
// "additionalInterfaces" matches names ignoring case (URL, Url, the last
// spelling winning), protojson takes the proto field name
// (additional_interfaces), and encoding/json/v2 matching names
// case-insensitively ignores dashes as well (A2A-10, A2A-12, A2A-15). A
// hostile agent's card, signed with its own key, whose 0.3 endpoint was
// "URL": "file:///etc/passwd", an additional_interfaces entry with a
// javascript: url, or an honest url beside another one spelt Url, was
// "valid": Verify neither checked those URLs nor refused the spelling,
// as it does for every 1.0 member. Should: card_duplicate_member for a
// member spelt like one of those (at the top level, and url in an entry
// of additionalInterfaces) but not exactly it; exact names still verify.
func TestCard03EndpointSpeltOtherwiseIsRefused(t *testing.T) {
	with := func(m ...jcs.Member) jcs.Object { return append(unsignedVectorTree(t), m...) }
	iface := func(name string, url any) []any {
		return []any{jcs.Object{{Name: name, Value: url}, {Name: "transport", Value: "JSONRPC"}}}
	}
	const honest, evil = "https://agent.example/a2a", "https://evil.example/a2a"
	for _, tc := range []struct {
		name string
		tree jcs.Object
		ok   bool
	}{
		{"URL file:", with(jcs.Member{Name: "URL", Value: "file:///etc/passwd"}), false},
		{"Url javascript:", with(jcs.Member{Name: "Url", Value: "javascript:alert(1)"}), false},
		{"url then Url", with(jcs.Member{Name: "url", Value: honest}, jcs.Member{Name: "Url", Value: evil}), false},
		{"u_r_l", with(jcs.Member{Name: "u_r_l", Value: evil}), false},
		{"additional_interfaces", with(jcs.Member{Name: "additional_interfaces", Value: iface("url", "javascript:alert(1)")}), false},
		{"additional-interfaces", with(jcs.Member{Name: "additional-interfaces", Value: iface("url", evil)}), false},
		{"AdditionalInterfaces", with(jcs.Member{Name: "AdditionalInterfaces", Value: iface("url", evil)}), false},
		{"additionalInterfaces URL", with(jcs.Member{Name: "additionalInterfaces", Value: iface("URL", "file:///etc/passwd")}), false},
		{"additionalInterfaces url and Url", with(jcs.Member{Name: "additionalInterfaces", Value: []any{
			jcs.Object{{Name: "url", Value: honest}, {Name: "Url", Value: evil}}}}), false},
		{"exact names", with(jcs.Member{Name: "url", Value: honest},
			jcs.Member{Name: "additionalInterfaces", Value: iface("url", honest+"/grpc")}), true},
	} {
		_, err := Verify(signTree(t, tc.tree), vectorPub(), "")
		switch {
		case tc.ok && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case !tc.ok && err == nil:
			t.Errorf("%s: verified", tc.name)
		case !tc.ok:
			wantName(t, err, ErrDuplicateMember)
		}
	}
}
