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

// maxMarks is the most combining marks in a row shown as themselves; the
// next ones of the run are shown as code points, so a run of marks
// cannot stack over the text around it.
const maxMarks = 2

// clean makes a publisher-controlled string safe to show as text: each
// control, format (bidirectional controls and zero-width characters
// among them), invisible filler, default-ignorable or invalid character,
// and each combining mark past maxMarks in a row, is shown as its code
// point, and the result is cut at n runes. The template escapes what
// remains.
func clean(s string, n int) string {
	var b strings.Builder
	runes, marks := 0, 0
	for i, r := range s {
		if runes >= n {
			fmt.Fprintf(&b, "… (%d more bytes)", len(s)-i)
			break
		}
		runes++
		if unicode.In(r, unicode.Mn, unicode.Me) {
			if marks++; marks > maxMarks {
				fmt.Fprintf(&b, "\\u%04x", r)
				continue
			}
		} else {
			marks = 0
		}
		switch {
		case r == utf8.RuneError:
			b.WriteString("\\ufffd")
		case r == '\n' || r == '\t':
			b.WriteRune(r)
		case hidden(r):
			fmt.Fprintf(&b, "\\u%04x", r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// hidden reports whether r shows as nothing, or changes how the text
// around it shows: controls, format characters (Cf: bidirectional
// controls, zero-width characters), line and paragraph separators, the
// default-ignorable characters (the Hangul fillers U+115F, U+1160,
// U+3164, U+FFA0 among them, and the variation selectors U+FE00..FE0F,
// U+E0100..E01EF and the Mongolian U+180B..180F, which are marks: a name
// with one reads as the name without it) and the blank Braille pattern
// U+2800.
func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp, unicode.Other_Default_Ignorable_Code_Point,
		unicode.Variation_Selector) || r == '\u2800'
}

// MaxJoined is the most items of a list shown on one line (join); the
// others are counted.
const MaxJoined = 16

// join is the first MaxJoined items of ss, each short, comma-separated,
// and how many more there are.
func join(ss []string) string {
	var b strings.Builder
	for i, s := range ss {
		if i == MaxJoined {
			fmt.Fprintf(&b, ", and %d more", len(ss)-i)
			break
		}
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(short(s))
	}
	return b.String()
}

// short is clean at MaxText.
func short(s string) string { return clean(s, MaxText) }

// long is clean at 16 times MaxText (notes).
func long(s string) string { return clean(s, 16*MaxText) }
