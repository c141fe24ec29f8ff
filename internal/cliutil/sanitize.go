package cliutil

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxShown bounds one piece of untrusted text in human output: Sanitize
// keeps at most this many bytes of its escaped form and marks a longer text
// as cut with "…".
const MaxShown = 512

// Sanitize renders text this program did not write itself (a peer's error
// message, a descriptor's notes, a key of a mirror's document, a field of a
// bundle or a statement) for one line of human output on a terminal, so that
// whoever wrote the text cannot drive the terminal (move the cursor, clear
// the screen, set the window title, write the clipboard with OSC 52), fake
// further output lines, or reorder what is shown with bidi controls.
// Printable text is kept as it is; the rest becomes a visible escape:
//
//   - newline, carriage return and tab: \n, \r, \t;
//   - the other C0 controls: \xHH (ESC is \x1b);
//   - DEL, the C1 controls U+0080-U+009F, the bidi controls (U+061C,
//     U+200E, U+200F, U+202A-U+202E, U+2066-U+2069) and the line and
//     paragraph separators U+2028, U+2029: \uHHHH;
//   - each byte that is not part of valid UTF-8: \xHH.
//
// At most MaxShown bytes of the escaped text are kept, never splitting an
// escape or a character, and a text cut short ends with "…". Backslashes
// are kept as they are: the result is for people to read, not to parse back.
// JSON output gets SanitizeJSON instead (PrintJSON): encoding/json
// escapes the C0 controls itself.
func Sanitize(s string) string { return sanitize(s, MaxShown) }

// SanitizeWhole is Sanitize without the length bound: for a value the
// reader is meant to pass back whole (a paging cursor), which a cut would
// break. The text must already be bounded by where it came from.
func SanitizeWhole(s string) string { return sanitize(s, 0) }

// SanitizeJoin is Sanitize applied to each of ss (each bounded on its own),
// joined with sep.
func SanitizeJoin(ss []string, sep string) string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = Sanitize(s)
	}
	return strings.Join(out, sep)
}

// SanitizeJSON renders JSON text (encoding/json's, or amp.JSONValue's) for
// a person reading a terminal: the runes JSON encoders leave as they are
// but a terminal may act on (DEL, C1 controls, bidi controls; see Sanitize)
// become \uHHHH escapes, which JSON reads back as the same string. Newlines
// are kept and nothing is cut: the JSON stays valid and whole.
//
// JSON never holds invalid UTF-8 or raw control characters, but a
// json.RawMessage could carry them (encoding/json does not check a raw
// value's UTF-8): they come out as \ufffd and \u00HH, so the text stays
// valid JSON.
func SanitizeJSON(j []byte) string { return escapeText(string(j), 0, true) }

// sanitize is Sanitize with the bound max (0: none).
func sanitize(s string, max int) string { return escapeText(s, max, false) }

// escapeText escapes s as Sanitize describes, keeping at most max bytes of
// the result (0: no bound). With asJSON (SanitizeJSON), "\n" is written as
// itself (the lines of indented JSON), and every escape is one JSON reads:
// \uHHHH, and \ufffd for a byte that is not UTF-8.
func escapeText(s string, max int, asJSON bool) string {
	if plain(s, max, asJSON) {
		return s
	}
	var b strings.Builder
	if max > 0 {
		b.Grow(min(len(s), max) + len("…"))
	} else {
		b.Grow(len(s))
	}
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		var esc string
		switch {
		case r == utf8.RuneError && n == 1 && asJSON:
			esc = `\ufffd`
		case r == utf8.RuneError && n == 1:
			esc = fmt.Sprintf(`\x%02x`, s[i])
		case r == '\n' && asJSON:
			esc = "\n"
		case r < 0x20 && asJSON:
			esc = fmt.Sprintf(`\u%04x`, r)
		case r == '\n':
			esc = `\n`
		case r == '\r':
			esc = `\r`
		case r == '\t':
			esc = `\t`
		case r < 0x20:
			esc = fmt.Sprintf(`\x%02x`, r)
		case escapedRune(r):
			esc = fmt.Sprintf(`\u%04x`, r)
		default:
			esc = s[i : i+n]
		}
		if max > 0 && b.Len()+len(esc) > max {
			b.WriteString("…")
			break
		}
		b.WriteString(esc)
		i += n
	}
	return b.String()
}

// plain reports whether s needs no escaping and fits in max bytes.
func plain(s string, max int, keepNewlines bool) bool {
	if max > 0 && len(s) > max {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 0x20 && !(keepNewlines && c == '\n')) || c >= 0x7f {
			return false
		}
	}
	return true
}

// escapedRune reports whether Sanitize writes the valid rune r (not a C0
// control) as \uHHHH.
func escapedRune(r rune) bool {
	switch {
	case r == 0x7f, r >= 0x80 && r <= 0x9f: // DEL, C1
		return true
	case r == 0x061c, r == 0x200e, r == 0x200f: // bidi marks
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069: // bidi embeddings, overrides, isolates
		return true
	case r == 0x2028, r == 0x2029: // line and paragraph separators
		return true
	}
	return false
}
