package client

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestProviderErrorMessageIsNeverPrintedRaw: a provider answers with its
// own text as the message of a CAP_RESULT error, or of a signed ERROR:
// terminal escapes, a forged log line, 64 KiB. Invoke, Call and Do return
// it as the *amp.Error's Message, and its Error() printed it as it came,
// so an embedder that logs the error wrote the provider's bytes into its
// own log (TRANSPORT-18 mended the name only). Error() now prints it
// escaped and bounded; the Result keeps the provider's message as sent
// (docs/SPEC-DECISIONS.md TRANSPORT-21).
func TestProviderErrorMessageIsNeverPrintedRaw(t *testing.T) {
	for _, msg := range []string{
		"\x1b[2J\x1b[31mdenied",
		"refused\nlevel=ERROR msg=\"disk wiped\"",
		strings.Repeat("a", 64<<10),
	} {
		for _, asError := range []bool{false, true} {
			p := newParties(t)
			tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
				d := amp.Draft{Type: amp.TypeCapResult, To: amp.To(m.From), ReplyTo: m.ID[:]}
				var err error
				if asError {
					d.Type = amp.TypeError
					d.Body, err = amp.Marshal(amp.ErrorBody{Code: amp.CodeBadRequest, Category: "client", Message: msg})
				} else {
					d.Body, err = capability.Result{Status: capability.StatusError, Error: &capability.ResultError{Code: amp.CodeBadRequest, Name: "denied", Message: msg}}.Encode()
				}
				if err != nil {
					return nil, err
				}
				_, out, err := send.Seal(context.Background(), d)
				return out, err
			})
			cl := p.client(t, tr)
			id, err := capability.ParseID("org.example.count:1.0.0")
			if err != nil {
				t.Fatal(err)
			}
			res, _, err := cl.Invoke(context.Background(), capability.Invoke{Capability: id.Name, Version: id.Version, Params: []byte{0xa0}})
			var e *amp.Error
			if !errors.As(err, &e) || e.Code != amp.CodeBadRequest {
				t.Fatalf("message %.40q (signed ERROR %v): Invoke's error %.80v, want 4001", msg, asError, err)
			}
			if text := err.Error(); strings.ContainsAny(text, "\x1b\n") || len(text) > amp.MaxErrorText+100 {
				t.Errorf("message %.40q (signed ERROR %v): the error's text carries it raw (%d bytes): %.80q", msg, asError, len(text), text)
			}
			if e.Message != msg {
				t.Errorf("message %.40q (signed ERROR %v): the error's Message field is no longer the provider's text as sent", msg, asError)
			}
			if !asError && (res == nil || res.Error == nil || res.Error.Message != msg) {
				t.Errorf("message %.40q: the Result no longer holds the provider's message as sent", msg)
			}
		}
	}
}
