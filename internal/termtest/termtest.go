package termtest

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// FakeLine is the line the "fake line" payload tries to print as if it
// were the program's own output.
const FakeLine = "ok: verified, nothing to worry about"

// Payload is a hostile text put in a field a peer or a file controls.
type Payload struct {
	Name string
	Text string
}

// Payloads are the terminal sequences and spoofing tricks the tests try,
// each framed by harmless text.
var Payloads = []Payload{
	{"CSI clear screen", "x\x1b[2J\x1b[Hy"},
	{"OSC 0 window title", "x\x1b]0;pwned\x07y"},
	{"OSC 52 clipboard write", "x\x1b]52;c;ZWNobyBwd25lZA==\x07y"},
	{"CSI as C1 U+009B", "x\u009b2Jy"},
	{"OSC as C1 U+009D", "x\u009d0;pwned\u009cy"},
	{"bidi override", "x\u202edecoy\u202cy"},
	{"bidi isolate", "x\u2067decoy\u2069y"},
	{"invalid UTF-8 and a raw C1 byte", "x\xff\x9b2Jy"},
	{"fake line", "x\n" + FakeLine + "\ry"},
	{"very long text", "x" + strings.Repeat("A", 200_000) + "y"},
}

// Unsafe describes the first thing in out a terminal may act on: a C0
// control other than newline (and tab, which is harmless), DEL, a C1
// control, a bidi control, a line or paragraph separator, or a byte of
// invalid UTF-8. It returns "" when there is none.
func Unsafe(out string) string {
	for i := 0; i < len(out); {
		r, n := utf8.DecodeRuneInString(out[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			return fmt.Sprintf("invalid UTF-8 byte %#x at %d", out[i], i)
		case r == '\n' || r == '\t':
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
			return fmt.Sprintf("control %U at %d", r, i)
		case r == 0x061c || r == 0x200e || r == 0x200f || (r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069):
			return fmt.Sprintf("bidi control %U at %d", r, i)
		case r == 0x2028 || r == 0x2029:
			return fmt.Sprintf("separator %U at %d", r, i)
		}
		i += n
	}
	return ""
}

// Check reports (t.Errorf) raw terminal controls in out, a line that starts
// with FakeLine, and out longer than maxLen bytes. what names the output.
func Check(t testing.TB, what, out string, maxLen int) {
	t.Helper()
	if u := Unsafe(out); u != "" {
		t.Errorf("%s: %s reaches the terminal: %q", what, u, clip(out))
	}
	if strings.HasPrefix(out, FakeLine) || strings.Contains(out, "\n"+FakeLine) {
		t.Errorf("%s: a peer's text prints a line of its own: %q", what, clip(out))
	}
	if len(out) > maxLen {
		t.Errorf("%s: %d bytes reach the terminal, want at most %d", what, len(out), maxLen)
	}
}

func clip(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "..."
	}
	return s
}
