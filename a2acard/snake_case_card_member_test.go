package a2acard

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// unsignedVectorTree is the vector card's tree without its signatures.
func unsignedVectorTree(t *testing.T) jcs.Object {
	t.Helper()
	tree, err := jcs.Parse(signedVector(t), jcs.MaxDepth)
	if err != nil {
		t.Fatal(err)
	}
	return tree.(jcs.Object).Without("signatures")
}

// withOwnParams returns f applied to the card's own extension's params.
func withOwnParams(o jcs.Object, f func(params jcs.Object) jcs.Object) jcs.Object {
	caps := get(o, "capabilities").(jcs.Object)
	ext := get(caps, "extensions").([]any)[0].(jcs.Object)
	ext = set(ext, "params", f(get(ext, "params").(jcs.Object)))
	return set(o, "capabilities", set(caps, "extensions", []any{ext}))
}

// TestSnakeCaseSpellingOfACardMemberIsRefused: the A2A card's
// JSON names are protojson's lowerCamelCase (supportedInterfaces,
// documentationUrl); protojson, and the SDKs that follow it, also accept
// the proto field name (supported_interfaces, documentation_url) as the
// same field.
//
// Attack: a hostile agent signs a card whose supportedInterfaces names
// its honest endpoint and whose supported_interfaces (or a lone
// documentation_url, a skill's input_modes, a protocol_binding) names
// another. A2A-10 refuses a spelling that differs only in case; this one
// differs by an underscore, so Verify signs it as an unknown member and
// reports the card valid, a Card decoder reads the honest member, and a
// protojson reader reads the other (or refuses the card): two readings
// of one signed card, an auditor shown one endpoint and clients dialling
// another. The same in our own extension's params: bundleId beside
// bundle_id is a second pin to a camelCase reader.
//
// Before A2A-12: every case verified.
//
// Should: card_duplicate_member for a member that is a Card struct
// member's name (or, in our params, a ServedParams name) but for case
// and underscores.
func TestSnakeCaseSpellingOfACardMemberIsRefused(t *testing.T) {
	const evil = "https://evil.example/amp"
	evilIface := jcs.Object{{Name: "url", Value: evil}, {Name: "protocolBinding", Value: BindingAMPHTTP}, {Name: "protocolVersion", Value: ProtocolVersion}}
	for _, tc := range []struct {
		name string
		f    func(jcs.Object) jcs.Object
	}{
		{"supported_interfaces beside supportedInterfaces", func(o jcs.Object) jcs.Object {
			return append(o, jcs.Member{Name: "supported_interfaces", Value: []any{evilIface}})
		}},
		{"a lone documentation_url", func(o jcs.Object) jcs.Object {
			return append(o, jcs.Member{Name: "documentation_url", Value: evil})
		}},
		{"protocol_binding in an interface", func(o jcs.Object) jcs.Object {
			i := get(o, "supportedInterfaces").([]any)[0].(jcs.Object)
			return set(o, "supportedInterfaces", []any{append(i, jcs.Member{Name: "protocol_binding", Value: "JSONRPC"})})
		}},
		{"input_modes in a skill", func(o jcs.Object) jcs.Object {
			s := get(o, "skills").([]any)[0].(jcs.Object)
			return set(o, "skills", []any{append(s, jcs.Member{Name: "input_modes", Value: []any{"text/html"}})})
		}},
		{"bundleId beside bundle_id in our params", func(o jcs.Object) jcs.Object {
			return withOwnParams(o, func(p jcs.Object) jcs.Object {
				e := get(p, "capabilities").([]any)[0].(jcs.Object)
				return set(p, "capabilities", []any{append(e, jcs.Member{Name: "bundleId", Value: "org.evil"})})
			})
		}},
	} {
		card := signTree(t, tc.f(unsignedVectorTree(t)))
		if _, err := Verify(card, vectorPub(), ""); err == nil {
			t.Errorf("%s: verified; a protojson reader reads another card than the verifier", tc.name)
		} else {
			wantName(t, err, ErrDuplicateMember)
		}
	}
}
