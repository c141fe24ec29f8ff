package catalog

import (
	"net/http"
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

// TestVariationSelectorsInSignedTextAreShownAsCodePoints: the variation
// selectors (U+FE00..U+FE0F, U+E0100..U+E01EF, the Mongolian
// U+180B..U+180F) are default-ignorable without being Cf or
// Other_Default_Ignorable_Code_Point: they passed as themselves,
// invisible. A publisher's schema with the properties "amount" (integer,
// at most 100) and "amount"+U+FE00 (any string) showed the operator two
// identical "amount" members, and notes could hide text the same way.
func TestVariationSelectorsInSignedTextAreShownAsCodePoints(t *testing.T) {
	for _, r := range []rune{0xFE00, 0xFE0F, 0xE0100, 0x180B, 0x180F} {
		if got := clean("amount"+string(r), MaxText); strings.ContainsRune(got, r) {
			t.Errorf("clean keeps the invisible %U as itself: %q", r, got)
		}
	}
	schema := []byte("{\"type\":\"object\",\"properties\":{\"amount\":{\"type\":\"integer\",\"maximum\":100},\"amount\ufe00\":{\"type\":\"string\"}}}")
	h := newHandler(t, newStore(t, deepBundle(t, schema)))
	res, body := get(t, h, http.MethodGet, "/ui/schema?b=org.hostile&k=deep.json")
	if res.StatusCode != http.StatusOK {
		t.Fatalf("status %d", res.StatusCode)
	}
	if strings.ContainsRune(body, 0xFE00) || !strings.Contains(body, `\ufe00`) {
		t.Errorf("a hostile schema shows two members that both read \"amount\": the variation selector U+FE00 is not shown as \\ufe00")
	}
}
