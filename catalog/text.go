package catalog

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxText is the most runes of one publisher-controlled value shown in a
// page; a longer one is cut, with a mark saying so.
const MaxText = 200

// clean makes a publisher-controlled string safe to show as text: each
// control, format (bidirectional overrides among them) or invalid
// character is shown as its code point, and the result is cut at n runes.
// The template escapes what remains.
func clean(s string, n int) string {
	var b strings.Builder
	runes := 0
	for i, r := range s {
		if runes >= n {
			fmt.Fprintf(&b, "… (%d more bytes)", len(s)-i)
			break
		}
		switch {
		case r == utf8.RuneError:
			b.WriteString("\\ufffd")
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case unicode.IsControl(r) || unicode.Is(unicode.Cf, r) || unicode.Is(unicode.Zl, r) || unicode.Is(unicode.Zp, r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
		runes++
	}
	return b.String()
}

// short is clean at MaxText.
func short(s string) string { return clean(s, MaxText) }

// long is clean at 16 times MaxText (notes).
func long(s string) string { return clean(s, 16*MaxText) }
