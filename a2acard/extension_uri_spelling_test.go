package a2acard

import (
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/jcs"
)

// TestExtensionURISpeltLikeOursIsRefused: the pins of a card are the
// params of the extension whose uri is ExtensionURI, and Verify checks
// those params (their member spellings, A2A-10; their ids, A2A-13 and
// A2A-22; the extension listed once, A2A-13) by that exact uri.
//
// Attack: a hostile agent signs a card whose extensions hold ours,
// honest, and a second one whose uri is ours spelt otherwise: scheme and
// host in capitals, an empty or default port (":443"), a percent-encoded
// letter ("%61mpbundle"), which RFC 3986 §6.2.2 and §6.2.3 make the same
// URI; the path in capitals or a long s in the fragment or the scheme,
// which strings.EqualFold takes for it; a blank around it, which a
// reader that trims drops. Its params pin other schemas, under an
// input_schema spelt INPUT_SCHEMA that A2A-10 refuses in ours. Verify
// reported the card valid (the uri was another extension's), and so a
// card holding only the variant: an auditor finds the honest pins or
// none, a reader that normalizes or folds the uri the second set,
// unchecked.
//
// Before A2A-23: 18 of 18 such cards verified. Should: card_invalid,
// alone or beside ours, quoting nothing of the uri; another extension of
// the same host, a v2 of ours and another port still verify.
func TestExtensionURISpeltLikeOursIsRefused(t *testing.T) {
	const evilPin = "sha-256:0000000000000000000000000000000000000000000000000000000000000000"
	for _, tc := range []struct {
		name, uri string
		ok        bool
	}{
		{"scheme and host in capitals", "HTTPS://GITHUB.COM/ampbundle/ampbundle#a2a-capabilities-v1", false},
		{"path in capitals", "https://github.com/AMPBUNDLE/ampbundle#a2a-capabilities-v1", false},
		{"default port", "https://github.com:443/ampbundle/ampbundle#a2a-capabilities-v1", false},
		{"empty port", "https://github.com:/ampbundle/ampbundle#a2a-capabilities-v1", false},
		{"percent-encoded letter", "https://github.com/%61mpbundle/ampbundle#a2a-capabilities-v1", false},
		{"percent-encoded fragment", "https://github.com/ampbundle/ampbundle#a2a%2Dcapabilities-v1", false},
		{"long s in the fragment", "https://github.com/ampbundle/ampbundle#a2a-capabilitie\u017f-v1", false},
		{"long s in the scheme", "http\u017f://github.com/ampbundle/ampbundle#a2a-capabilities-v1", false},
		{"a blank around it", " https://github.com/ampbundle/ampbundle#a2a-capabilities-v1\t", false},
		{"another extension of the host", "https://github.com/ampbundle/ampbundle#a2a-other-v1", true},
		{"a v2 of ours", "https://github.com/ampbundle/ampbundle#a2a-capabilities-v2", true},
		{"another port", "https://github.com:8443/ampbundle/ampbundle#a2a-capabilities-v1", true},
	} {
		for _, beside := range []bool{true, false} {
			tree := unsignedVectorTree(t)
			caps := get(tree, "capabilities").(jcs.Object)
			ours := get(caps, "extensions").([]any)[0].(jcs.Object)
			if get(ours, "uri") != ExtensionURI {
				t.Fatal("the vector's extension is not ours")
			}
			params, err := jcs.Parse([]byte(`{"capabilities":[{"id":"org.example.translate.text:2.1.0","bundle_id":"org.example.translate","INPUT_SCHEMA":"`+evilPin+`","output_schema":"`+evilPin+`"}]}`), jcs.MaxDepth)
			if err != nil {
				t.Fatal(err)
			}
			variant := set(set(append(jcs.Object{}, ours...), "uri", tc.uri), "params", params)
			exts := []any{variant}
			if beside {
				exts = []any{ours, variant}
			}
			card := signTree(t, set(tree, "capabilities", set(caps, "extensions", exts)))
			_, err = Verify(card, vectorPub(), "")
			name := tc.name + map[bool]string{true: ", beside ours", false: ", alone"}[beside]
			switch {
			case tc.ok && err != nil:
				t.Errorf("%s: %v; want it to verify", name, err)
			case !tc.ok && err == nil:
				t.Errorf("%s: verified; a reader that normalizes the uri takes its unchecked pins for ours", name)
			case !tc.ok:
				wantName(t, err, ErrInvalid)
				if strings.Contains(err.Error(), tc.uri) {
					t.Errorf("%s: the refusal quotes the uri", name)
				}
			}
		}
	}
}
