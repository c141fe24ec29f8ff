package amp

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxErrorText bounds what Error prints of an error's name and of its
// message, each, and what SafeMessage returns: at most this many bytes in
// all, a cut text ending with a mark saying it was cut and how long it
// was (docs/SPEC-DECISIONS.md TRANSPORT-21, TRANSPORT-23).
const MaxErrorText = 512

// errorText renders s, an error's name or message, for Error: a message
// may be a peer's text as sent (a signed ERROR's message, a CAP_RESULT
// error's), which reaches whatever log or terminal the embedder writes
// the error to. Printable text is kept as it is; the rest becomes a
// visible escape, so that whoever wrote the text cannot drive a terminal,
// forge further log lines or reorder what is shown:
//
//   - newline, carriage return and tab: \n, \r, \t;
//   - the other C0 controls: \xHH (ESC is \x1b);
//   - each byte that is not part of valid UTF-8: \xHH;
//   - DEL, the C1 controls U+0080-U+009F, the format characters
//     (Unicode Cf: the bidi controls, zero-width characters, the byte
//     order mark, the tag characters) and the line and paragraph
//     separators U+2028, U+2029: \uHHHH or \UHHHHHHHH.
//
// An escaped text of at most MaxErrorText bytes is kept whole; a longer
// one is cut, never splitting an escape or a character, and ends with
// "… (cut, N bytes)", N its length as sent, the mark within the
// MaxErrorText bytes. Backslashes are kept as they are: the result is
// for people to read, not to parse back. The module's own messages need
// none of this and come out unchanged, and so does errorText's own
// result: an error handed on from agent to agent (SafeMessage, then a
// peer's ErrorBody.AsError) is escaped and cut once, not once a hop.
func errorText(s string) string {
	if plainErrorText(s) {
		return s
	}
	mark := fmt.Sprintf("… (cut, %d bytes)", len(s))
	var b strings.Builder
	b.Grow(min(len(s), MaxErrorText))
	keep := 0 // the longest escaped prefix that leaves room for mark
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		esc := escapeErrorRune(s[i:i+n], r, n)
		if b.Len()+len(esc) > MaxErrorText {
			return b.String()[:keep] + mark
		}
		b.WriteString(esc)
		if b.Len() <= MaxErrorText-len(mark) {
			keep = b.Len()
		}
		i += n
	}
	return b.String()
}

// escapeErrorRune is what errorText writes for the rune r, encoded as
// raw (n bytes; a byte that is not UTF-8 when r is utf8.RuneError and n
// is 1).
func escapeErrorRune(raw string, r rune, n int) string {
	switch {
	case r == utf8.RuneError && n == 1:
		return fmt.Sprintf(`\x%02x`, raw[0])
	case r == '\n':
		return `\n`
	case r == '\r':
		return `\r`
	case r == '\t':
		return `\t`
	case r < 0x20:
		return fmt.Sprintf(`\x%02x`, r)
	case r == 0x7f, r >= 0x80 && r <= 0x9f, r == 0x2028, r == 0x2029, unicode.Is(unicode.Cf, r):
		if r > 0xffff {
			return fmt.Sprintf(`\U%08x`, r)
		}
		return fmt.Sprintf(`\u%04x`, r)
	}
	return raw
}

// plainErrorText reports whether errorText keeps s as it is: printable
// ASCII within the bound (the module's own names and messages).
func plainErrorText(s string) bool {
	if len(s) > MaxErrorText {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x20 || s[i] >= 0x7f {
			return false
		}
	}
	return true
}
