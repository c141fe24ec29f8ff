package a2acard

import (
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestDashSpellingOfACardMemberIsRefused: A2A-12 folds case and
// underscores and rejected folding '-' ("protojson does not"). Go's own
// encoding/json/v2 does: with MatchCaseInsensitiveNames (or a field's
// `case:ignore`) "matching is case-insensitive where dashes and
// underscores are also ignored" (its package doc; its foldName drops '_'
// and '-'), so "documentation-url" is
// documentationUrl to it, "supported-interfaces" supportedInterfaces.
//
// Attack: a hostile agent signs a card whose supportedInterfaces names its
// honest endpoint and whose "supported-interfaces" names another (or a
// lone "documentation-url"). Verify and a Card decoder read the honest
// member (or none); an embedder decoding the verified card into a Card
// with json/v2 and MatchCaseInsensitiveNames reads the lone spelling as
// the member, and refuses the pair as one name twice: two readings of one
// signed card, as A2A-12 describes for snake_case (checked against
// json/v2 itself by TestEveryNameJSONv2TakesForACardMemberIsRefused,
// under GOEXPERIMENT=jsonv2).
//
// Before A2A-15: verified.
//
// Should: '-' is left out of the spelling key like '_':
// card_duplicate_member.
func TestDashSpellingOfACardMemberIsRefused(t *testing.T) {
	evilIface := jcs.Object{{Name: "url", Value: "https://evil.example/amp"}, {Name: "protocolBinding", Value: BindingAMPHTTP}, {Name: "protocolVersion", Value: ProtocolVersion}}
	for _, m := range []jcs.Member{
		{Name: "supported-interfaces", Value: []any{evilIface}},
		{Name: "documentation-url", Value: "https://evil.example/docs"},
		{Name: "Icon-Url", Value: "https://evil.example/icon.png"},
	} {
		card := signTree(t, append(unsignedVectorTree(t), m))
		if _, err := Verify(card, vectorPub(), ""); err == nil {
			t.Errorf("%s: verified; a json/v2 case-insensitive reader reads another card than the verifier", m.Name)
		} else {
			wantName(t, err, ErrDuplicateMember)
		}
	}
}
