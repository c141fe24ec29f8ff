package cliutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/termtest"
)

// TestSanitizeEscapesTerminalSequences: every sequence a terminal acts on,
// and every bidi control, comes out as a visible escape; printable text
// (accents, CJK, emoji) is kept (threat: a peer's text driving the
// terminal or reordering what it shows).
func TestSanitizeEscapesTerminalSequences(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text: ok", "plain text: ok"},
		{"café 日本 🙂 \\x1b", "café 日本 🙂 \\x1b"},
		{"a\x1b[2Jb", `a\x1b[2Jb`},
		{"a\x1b]0;title\x07b", `a\x1b]0;title\x07b`},
		{"a\x1b]52;c;ZWNobyBwd25lZA==\x07b", `a\x1b]52;c;ZWNobyBwd25lZA==\x07b`},
		{"a\u009b2Jb", `a\u009b2Jb`},
		{"a\u0080\u009fb", `a\u0080\u009fb`},
		{"a\x7fb", `a\u007fb`},
		{"a\u202eevil\u202cb", `a\u202eevil\u202cb`},
		{"\u2066\u2067\u2068\u2069\u202a\u202b\u202d\u200e\u200f\u061c", `\u2066\u2067\u2068\u2069\u202a\u202b\u202d\u200e\u200f\u061c`},
		{"a\u2028b\u2029c", `a\u2028b\u2029c`},
		{"a\xffb\x9bc\xc2", `a\xffb\x9bc\xc2`},
		{"line\nfake\r\tx\x00", `line\nfake\r\tx\x00`},
	} {
		if got := Sanitize(tt.in); got != tt.want {
			t.Errorf("Sanitize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, p := range termtest.Payloads {
		termtest.Check(t, p.Name, Sanitize(p.Text), MaxShown+len("…"))
	}
}

// TestSanitizeBoundsLongText: a long text is cut at MaxShown bytes, marked
// with "…", and never in the middle of a character or an escape (threat: a
// peer flooding the terminal, scrolling away what came before).
func TestSanitizeBoundsLongText(t *testing.T) {
	for _, in := range []string{
		strings.Repeat("A", 10*MaxShown),
		strings.Repeat("é", MaxShown),
		strings.Repeat("\x1b", MaxShown),
		strings.Repeat("a\u202e", MaxShown),
	} {
		got := Sanitize(in)
		if len(got) > MaxShown+len("…") || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
			t.Errorf("Sanitize(%.20q...) = %d bytes %.40q...", in, len(got), got)
		}
		body := strings.TrimSuffix(got, "…")
		if strings.HasSuffix(body, `\`) || strings.HasSuffix(body, `\x`) || strings.HasSuffix(body, `\u20`) {
			t.Errorf("an escape is cut: %q", body[len(body)-10:])
		}
	}
	exact := strings.Repeat("A", MaxShown)
	if got := Sanitize(exact); got != exact {
		t.Errorf("a text of exactly MaxShown bytes is cut")
	}
}

// TestRemoteErrorCannotInjectTerminalSequences: an error whose message (or
// cause, or hint) carries a peer's text is printed on stderr escaped and
// bounded (threat: a hostile agent or mirror writing terminal sequences,
// or fake lines, to the user's terminal through an ERROR message).
func TestRemoteErrorCannotInjectTerminalSequences(t *testing.T) {
	for _, p := range termtest.Payloads {
		for _, shape := range []struct {
			name string
			err  func(s string) error
		}{
			{"amp error", func(s string) error {
				return amp.ErrorBody{Code: amp.CodeBadRequest, Message: s}.AsError()
			}},
			{"wrapped message", func(s string) error {
				return amp.Named(amp.CodeRelayRejected, "handshake_refused", "the agent refused the handshake: %s", s)
			}},
			{"amp cause", func(s string) error {
				return Failf("sync_failed", "cannot sync").WithCause(amp.ErrorBody{Code: amp.CodeBadRequest, Message: s}.AsError())
			}},
			{"plain cause", func(s string) error {
				return Failf("sync_failed", "cannot sync").WithCause(errors.New(s))
			}},
			{"plain error", func(s string) error { return errors.New(s) }},
			{"hint", func(s string) error { return WithHint(Failf("bad", "refused"), "details from the provider: "+s) }},
			{"usage", func(s string) error { return Usagef("%s", s) }},
		} {
			app := &cli.App{Name: "x", Commands: []*cli.Command{{Name: "run", Action: func(*cli.Context) error { return shape.err(p.Text) }}}}
			var stdout, stderr bytes.Buffer
			env := &Env{Stdout: &stdout, Stderr: &stderr}
			if code := Run(context.Background(), app, env, []string{"x", "run"}); code == 0 {
				t.Fatalf("%s, %s: exit 0", p.Name, shape.name)
			}
			termtest.Check(t, p.Name+", "+shape.name, stderr.String(), 4*MaxShown)
		}
	}
}

// TestJSONOutputCannotInjectTerminalSequences: JSON output (PrintJSON:
// --json, and a provider's result shown to people) escapes what
// encoding/json passes through (C1 and bidi controls: threat, a peer's text
// driving the terminal of whoever reads --json output) and still reads
// back as the same value.
func TestJSONOutputCannotInjectTerminalSequences(t *testing.T) {
	for _, p := range termtest.Payloads {
		if p.Name == "very long text" {
			continue // a result is shown whole
		}
		v := map[string]any{"text": p.Text, "list": []string{p.Text}}
		var out bytes.Buffer
		if err := PrintJSON(&out, v); err != nil {
			t.Fatal(err)
		}
		termtest.Check(t, p.Name, out.String(), 1<<20)
		var back map[string]any
		if err := json.Unmarshal(out.Bytes(), &back); err != nil {
			t.Fatalf("%s: %v: %s", p.Name, err, out.String())
		}
		// What encoding/json itself reads back from v's plain encoding.
		var plain map[string]any
		raw, _ := json.Marshal(v)
		if err := json.Unmarshal(raw, &plain); err != nil {
			t.Fatal(err)
		}
		want, _ := json.Marshal(plain)
		got, _ := json.Marshal(back)
		if !bytes.Equal(got, want) {
			t.Errorf("%s: the JSON output reads back as %s, want %s", p.Name, got, want)
		}
	}
}

// TestSanitizeWholeKeepsAValueToPassBack: a printable cursor longer than
// MaxShown is printed whole (a cut one would fail when passed back with
// --cursor), while its control characters are still escaped.
func TestSanitizeWholeKeepsAValueToPassBack(t *testing.T) {
	cursor := strings.Repeat("c0ffee", 400)
	if got := SanitizeWhole(cursor); got != cursor {
		t.Fatalf("a %d-byte printable cursor came out as %d bytes", len(cursor), len(got))
	}
	if got := SanitizeWhole(cursor + "\x1b]0;pwned\x07"); strings.ContainsAny(got, "\x1b\x07") || !strings.HasPrefix(got, cursor) {
		t.Fatalf("control characters kept, or the cursor cut: %q", got[len(got)-20:])
	}
}

// TestSanitizeJSONKeepsJSONValid: what encoding/json passes through in a
// json.RawMessage (invalid UTF-8, C1 and bidi controls) comes out as
// escapes JSON reads (threat: --json output a JSON reader refuses, or one
// whose \x escapes are not JSON at all).
func TestSanitizeJSONKeepsJSONValid(t *testing.T) {
	for _, raw := range []string{"\"x\xffy\"", "\"\u009b2J\u202e\"", "{\"k\xc0\":\"\xed\xa0\x80\"}"} {
		var out bytes.Buffer
		if err := PrintJSON(&out, map[string]json.RawMessage{"v": json.RawMessage(raw)}); err != nil {
			t.Fatal(err)
		}
		if !json.Valid(out.Bytes()) {
			t.Errorf("%q: the output is not valid JSON: %s", raw, out.String())
		}
		termtest.Check(t, raw, out.String(), 1<<10)
	}
}
