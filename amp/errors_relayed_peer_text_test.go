package amp

import (
	"strconv"
	"strings"
	"testing"
)

// TestRelayedPeerErrorIsNeverResignedRaw: a handler that calls another
// agent and returns the error it got (a signed ERROR, ErrorBody.AsError)
// has its agent sign an ERROR whose message is SafeMessage of that
// error. SafeMessage returned the peer's Message as sent, so the agent
// signed as its own the peer's terminal escapes, forged log lines, bidi
// overrides and up to the message limit of text, and handed them on to
// its caller's logs and terminal (and CLIs and logs that write
// SafeMessage took them raw too). SafeMessage now escapes and bounds
// the text as Error prints it (errorText), so the re-signed message
// holds none of it raw and at most MaxErrorText bytes
// (docs/SPEC-DECISIONS.md TRANSPORT-23).
func TestRelayedPeerErrorIsNeverResignedRaw(t *testing.T) {
	for _, c := range []struct {
		threat, msg, want string
	}{
		{"terminal escape", "\x1b[2J\x1b]0;owned\x07done", `\x1b[2J\x1b]0;owned\x07done`},
		{"forged log line", "busy\nlevel=ERROR msg=\"root login\"\r", `busy\nlevel=ERROR msg="root login"\r`},
		{"bidi override", "pay \u202eredlof\u202c now", `pay \u202eredlof\u202c now`},
		{"invisible format characters", "a\u200bb\ufeffc", `a\u200bb\ufeffc`},
		{"bytes that are not UTF-8", "a\xff\xc3b", `a\xff\xc3b`},
		{"printable text in any script", "déjà vu: 東京 ok", "déjà vu: 東京 ok"},
	} {
		t.Run(c.threat, func(t *testing.T) {
			peer := ErrorBody{Code: CodeUnavailable, Category: "server", Message: c.msg}.AsError()
			if got := SafeMessage(peer); got != c.want {
				t.Errorf("SafeMessage = %q, want %q", got, c.want)
			}
			if got := ErrorBodyOf(peer).Message; got != c.want {
				t.Errorf("the re-signed ERROR's message = %q, want %q", got, c.want)
			}
		})
	}
	// A name a caller took from a peer without a check, on an error with
	// no message, is the same text.
	if got, want := SafeMessage(&Error{Code: CodeBadRequest, Name: "x_\x1b[31m"}), `x \x1b[31m`; got != want {
		t.Errorf("SafeMessage of a peer's name = %q, want %q", got, want)
	}
}

// TestRelayedPeerErrorCannotGrowAlongAChainOfAgents: a peer's 64 KiB
// message (or one of escapes, each byte four when escaped) was re-signed
// whole by every agent that handed the error on. It is now cut to
// MaxErrorText bytes in all, the cut marked with the length as sent, and
// an agent that hands on an error already cut (the next hop's
// ErrorBody.AsError of this one's ERROR) signs the same text: neither
// escaped twice nor cut again.
func TestRelayedPeerErrorCannotGrowAlongAChainOfAgents(t *testing.T) {
	for _, c := range []struct {
		threat, msg string
	}{
		{"64 KiB of text", strings.Repeat("a", 64<<10)},
		{"64 KiB of escapes", strings.Repeat("\x1b", 64<<10)},
		{"64 KiB of wide characters", strings.Repeat("東", 64<<10/3)},
		{"one byte over the bound", strings.Repeat("b", MaxErrorText+1)},
	} {
		t.Run(c.threat, func(t *testing.T) {
			hop := ErrorBody{Code: CodeUnavailable, Category: "server", Message: c.msg}.AsError()
			first := ErrorBodyOf(hop).Message
			if len(first) > MaxErrorText || !strings.HasSuffix(first, "… (cut, "+strconv.Itoa(len(c.msg))+" bytes)") {
				t.Fatalf("the first agent signs %d bytes (at most %d), ending %q", len(first), MaxErrorText, first[max(0, len(first)-24):])
			}
			for i := range 3 {
				hop = ErrorBodyOf(hop).AsError()
				if got := ErrorBodyOf(hop).Message; got != first {
					t.Fatalf("agent %d signs %d bytes ending %q, want the first agent's text unchanged", i+2, len(got), got[max(0, len(got)-24):])
				}
			}
			if got := hop.Error(); got != "unavailable (5002): "+first {
				t.Errorf("the last caller's Error() = %.60q…, want the text printed as signed", got)
			}
		})
	}
	// The module's own messages are unchanged.
	own := Named(CodeBadRequest, "wrong_sender", "the reply is from %q", "did:key:z6\x1b")
	if got, want := SafeMessage(own), `the reply is from "did:key:z6\x1b"`; got != want {
		t.Errorf("SafeMessage of the module's own message = %q, want it unchanged %q", got, want)
	}
}
