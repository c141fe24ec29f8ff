//go:build goexperiment.jsonv2

package a2acard

import (
	jsonv2 "encoding/json/v2"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestEveryNameJSONv2TakesForACardMemberIsRefused runs only with
// GOEXPERIMENT=jsonv2: encoding/json/v2 with MatchCaseInsensitiveNames
// takes a name for a Card field when it folds to the field's name with '_'
// and '-' left out. Every such name that is not the field's own must be one
// the verifier refuses (jcs.Spellings.Variant; A2A-12, A2A-15), and a name
// it refuses must be one json/v2 takes: the two foldings are one.
func TestEveryNameJSONv2TakesForACardMemberIsRefused(t *testing.T) {
	for _, name := range []string{
		"documentationUrl", "documentation-url", "documentation_url", "DOCUMENTATION-URL",
		"d-o-c-u-m-e-n-t-a-t-i-o-n-u-r-l", "document\u0430tionUrl",
		"iconUrl", "icon-url", "ICON_URL", "icon.url", "icon url", "ｉｃｏｎＵｒｌ", "\u0130conUrl", "iconUrl_", "-iconUrl",
	} {
		var c Card
		raw, _ := jsonv2.Marshal(name)
		err := jsonv2.Unmarshal([]byte(`{`+string(raw)+`:"x"}`), &c, jsonv2.MatchCaseInsensitiveNames(true))
		if err != nil {
			t.Fatalf("%q: %v", name, err)
		}
		taken := (c.DocumentationURL != nil && name != "documentationUrl") || (c.IconURL != nil && name != "iconUrl")
		refused := cardNames().spellings.Variant(jcs.Object{{Name: name, Value: "x"}})
		if taken != refused {
			t.Errorf("%q: json/v2 takes it for another member %v, the verifier refuses it %v", name, taken, refused)
		}
	}
}
