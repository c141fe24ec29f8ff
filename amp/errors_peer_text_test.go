package amp

import (
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestPeerErrorMessageCannotWriteRawIntoTheEmbeddersLog: a peer answers
// with a signed ERROR whose message is its own text, any bytes and any
// length. ErrorBody.AsError kept it as the error's Message, and Error()
// printed it as it came, so an embedder that logs the error (or shows it
// on a terminal) wrote the peer's terminal escapes, a forged log line,
// bidi overrides that reorder what an operator reads, or 64 KiB, as its
// own. Error() now prints the message escaped and bounded (a cut
// marked, with the length as sent); the Message field keeps the text as
// sent (docs/SPEC-DECISIONS.md TRANSPORT-21).
func TestPeerErrorMessageCannotWriteRawIntoTheEmbeddersLog(t *testing.T) {
	for _, c := range []struct {
		threat, msg, want string
	}{
		{"terminal escape", "\x1b[2J\x1b]0;owned\x07done", `\x1b[2J\x1b]0;owned\x07done`},
		{"forged log line", "busy\nlevel=ERROR msg=\"root login\"\r", `busy\nlevel=ERROR msg="root login"\r`},
		{"bidi override", "pay \u202eredlof\u202c now", `pay \u202eredlof\u202c now`},
		{"invisible format characters", "a\u200bb\ufeffc\U000e0041", `a\u200bb\ufeffc\U000e0041`},
		{"C1 control and DEL", "x\u009b31my\x7f", `x\u009b31my\u007f`},
		{"line separator", "a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"bytes that are not UTF-8", "a\xff\xc3b", `a\xff\xc3b`},
		{"tab", "a\tb", `a\tb`},
		{"printable text in any script", "déjà vu: 東京 ok", "déjà vu: 東京 ok"},
	} {
		t.Run(c.threat, func(t *testing.T) {
			retry := false
			e := ErrorBody{Code: CodeBadRequest, Category: "client", Message: c.msg, Retry: &retry}.AsError()
			if want := "bad_request (4001): " + c.want; e.Error() != want {
				t.Errorf("Error() = %q, want %q", e.Error(), want)
			}
			if e.Message != c.msg {
				t.Errorf("the Message field = %q, want the peer's text as sent %q", e.Message, c.msg)
			}
		})
	}
}

// TestPeerErrorMessageCannotFloodTheEmbeddersLog: a signed ERROR's
// message of 64 KiB (or one of escapes, each a byte the peer sent that
// prints as four) was printed whole by Error() on every log line that
// named the error. At most MaxErrorText bytes of the escaped text are
// printed, never splitting an escape or a character, with a mark saying
// it was cut and how long it was.
func TestPeerErrorMessageCannotFloodTheEmbeddersLog(t *testing.T) {
	for _, c := range []struct {
		threat, msg string
	}{
		{"64 KiB of text", strings.Repeat("a", 64<<10)},
		{"64 KiB of escapes", strings.Repeat("\x1b", 64<<10)},
		{"64 KiB of wide characters", strings.Repeat("東", 64<<10/3)},
		{"one byte over the bound", strings.Repeat("b", MaxErrorText+1)},
	} {
		t.Run(c.threat, func(t *testing.T) {
			e := ErrorBody{Code: CodeOverloaded, Category: "server", Message: c.msg}.AsError()
			got := e.Error()
			_, text, _ := strings.Cut(got, ": ")
			mark := "… (cut, " + strconv.Itoa(len(c.msg)) + " bytes)"
			shown, ok := strings.CutSuffix(text, mark)
			if !ok {
				t.Fatalf("Error() = %.80q…, want it to end with %q", got, mark)
			}
			if len(shown) > MaxErrorText || !utf8.ValidString(shown) || strings.HasSuffix(shown, `\`) || strings.HasSuffix(shown, `\x1`) {
				t.Errorf("the printed part is %d bytes (at most %d), valid UTF-8 %v, ends %q", len(shown), MaxErrorText, utf8.ValidString(shown), shown[max(0, len(shown)-4):])
			}
			if e.Message != c.msg {
				t.Error("the Message field no longer holds the peer's text as sent")
			}
		})
	}
	// The bound itself is printed whole.
	at := strings.Repeat("c", MaxErrorText)
	if got := (&Error{Code: CodeBadRequest, Message: at}).Error(); got != "bad_request (4001): "+at {
		t.Errorf("a message of exactly MaxErrorText bytes printed as %.60q…", got)
	}
}

// TestPeerErrorTextIsEscapedWhereverItSits: the same rule holds for a
// name that did not pass ValidErrName (a caller that builds an Error
// from a peer's CAP_RESULT without the client's check) and for an Error
// that is the cause of another: what a peer wrote is printed escaped
// wherever the chain puts it, and the module's own text is unchanged.
func TestPeerErrorTextIsEscapedWhereverItSits(t *testing.T) {
	peer := &Error{Code: CodeBadRequest, Name: "x\x1b[31m", Message: "m\n2"}
	if got, want := peer.Error(), `x\x1b[31m (4001): m\n2`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	outer := Wrap(CodeTimeout, peer, "gave up retrying after %d attempts", 3)
	if got, want := outer.Error(), `timeout (5003): gave up retrying after 3 attempts: x\x1b[31m (4001): m\n2`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	own := Named(CodeBadRequest, "wrong_sender", "the reply is from %q, not from %q", "did:key:z6\x1b", "did:key:z7")
	if got, want := own.Error(), `wrong_sender (4001): the reply is from "did:key:z6\x1b", not from "did:key:z7"`; got != want {
		t.Errorf("a message of the module's own (quoted input) = %q, want it unchanged %q", got, want)
	}
}
