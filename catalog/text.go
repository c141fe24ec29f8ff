package catalog

import (
	"context"
	"fmt"
	"html/template"
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
	cleanTo(&b, s, n, false)
	return b.String()
}

// cleanTo writes clean(s, n) to b, HTML-escaped when escape is set (as
// template.HTMLEscapeString: & < > " '; NUL is already a code point).
func cleanTo(b *strings.Builder, s string, n int, escape bool) {
	runes, marks := 0, 0
	for i, r := range s {
		if runes >= n {
			fmt.Fprintf(b, "… (%d more bytes)", len(s)-i)
			break
		}
		runes++
		if unicode.In(r, unicode.Mn, unicode.Me) {
			if marks++; marks > maxMarks {
				fmt.Fprintf(b, "\\u%04x", r)
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
			fmt.Fprintf(b, "\\u%04x", r)
		case escape && htmlEntity(r) != "":
			b.WriteString(htmlEntity(r))
		default:
			b.WriteRune(r)
		}
	}
}

// htmlEntity is the entity of r when template.HTMLEscapeString escapes
// it (but NUL, which clean shows as a code point), else "".
func htmlEntity(r rune) string {
	switch r {
	case '&':
		return "&amp;"
	case '<':
		return "&lt;"
	case '>':
		return "&gt;"
	case '"':
		return "&#34;"
	case '\'':
		return "&#39;"
	}
	return ""
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

// renderCheck is how many pieces of a schema are rendered (schemaHTML),
// or tokens of it printed (prettyFor), between two looks at whether the
// client is still there.
const renderCheck = 1024

// schemaHTML is the markup of the pieces of a rendered schema (the inside
// of its <pre>), written here rather than by the template: executed by
// reflection, the template cost some twenty allocations a piece (a 1 MiB
// rendering, 35,000 pieces, took 25 MB and a million allocations a
// schema). Each text is cleaned and escaped (template.HTMLEscapeString:
// & < > " ' and NUL), each id and href escaped inside its double quotes;
// a link is kept only to a page of the catalog or an anchor of this page
// (all refHref builds), else its text is shown alone. It stops with the
// context's error once ctx ends (checked every renderCheck pieces).
func schemaHTML(ctx context.Context, toks []Tok) (template.HTML, error) {
	size := 0
	for _, t := range toks {
		size += len(t.Text) + len(t.ID) + len(t.Href) + anchorMarkup + linkMarkup
	}
	var b strings.Builder
	b.Grow(size + size/4)
	for i, t := range toks {
		if i%renderCheck == 0 {
			if err := ctx.Err(); err != nil {
				return "", err
			}
		}
		if t.ID != "" {
			b.WriteString(`<span id="`)
			cleanTo(&b, t.ID, 1<<30, true)
			b.WriteString(`"></span>`)
		}
		link := t.Href != "" && (strings.HasPrefix(t.Href, "#") || strings.HasPrefix(t.Href, Prefix))
		if link {
			b.WriteString(`<a href="`)
			cleanTo(&b, t.Href, 1<<30, true)
			b.WriteString(`">`)
		}
		cleanTo(&b, t.Text, 1<<30, true)
		if link {
			b.WriteString(`</a>`)
		}
	}
	return template.HTML(b.String()), nil
}
