package catalog

import (
	"strings"
	"testing"
)

// TestInvisibleAndStackingCharactersAreShownAsCodePoints: a publisher's
// name or note cannot hide text (fillers, zero-width and bidirectional
// controls) or smear over the page (long runs of combining marks): each
// such character is shown as its code point.
func TestInvisibleAndStackingCharactersAreShownAsCodePoints(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"Hangul fillers", "a\u115fb\u1160c\u3164d\uffa0e", `a\u115fb\u1160c\u3164d\uffa0e`},
		{"zero width", "a\u200bb\u200cc\u200dd\u2060e\ufeff", `a\u200bb\u200cc\u200dd\u2060e\ufeff`},
		{"bidi controls", "a\u202eb\u2066c\u2069", `a\u202eb\u2066c\u2069`},
		{"blank braille", "a\u2800b", `a\u2800b`},
		{"two marks kept", "e\u0301\u0302", "e\u0301\u0302"},
		{"a run of marks", "e\u0301\u0302\u0303\u0304x\u0301", "e\u0301\u0302" + `\u0303\u0304` + "x\u0301"},
		{"plain text", "Grüße, 世界 ✓", "Grüße, 世界 ✓"},
	} {
		if got := clean(c.in, MaxText); got != c.want {
			t.Errorf("%s: clean(%q) = %q, want %q", c.name, c.in, got, c.want)
		}
	}
	zalgo := "x" + strings.Repeat("\u0336", 500)
	if got := short(zalgo); strings.Count(got, "\u0336") > maxMarks {
		t.Errorf("a run of %d marks keeps %d of them", 500, strings.Count(got, "\u0336"))
	}
}
