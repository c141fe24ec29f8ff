package client

import (
	"context"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestProvidersErrorIsNeverResignedRawByAnAgentThatHandsItOn: an agent's
// handler invokes a provider through a Client and returns the error it
// got, a CAP_RESULT error or a signed ERROR whose message is the
// provider's text: terminal escapes, a forged log line, a bidi override,
// 64 KiB. The agent answers with capability.NewErrorResult or
// amp.ErrorBodyOf of that error, whose message is amp.SafeMessage's, and
// SafeMessage handed the provider's text on as sent: the agent signed it
// as its own answer, into its caller's logs and terminal. It is now
// escaped and bounded there, as Error prints it (docs/SPEC-DECISIONS.md
// TRANSPORT-23).
func TestProvidersErrorIsNeverResignedRawByAnAgentThatHandsItOn(t *testing.T) {
	for _, msg := range []string{
		"\x1b[2J\x1b[31mdenied",
		"refused\nlevel=ERROR msg=\"disk wiped\"",
		"pay \u202eredlof\u202c now",
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
			_, _, err = cl.Invoke(context.Background(), capability.Invoke{Capability: id.Name, Version: id.Version, Params: []byte{0xa0}})
			if amp.CodeOf(err) != amp.CodeBadRequest {
				t.Fatalf("message %.40q (signed ERROR %v): Invoke's error %.80v, want 4001", msg, asError, err)
			}
			resigned := map[string]string{
				"the CAP_RESULT the agent signs": capability.NewErrorResult(err).Error.Message,
				"the ERROR the agent signs":      amp.ErrorBodyOf(err).Message,
				"amp.SafeMessage":                amp.SafeMessage(err),
			}
			for where, text := range resigned {
				if strings.ContainsAny(text, "\x1b\n\u202e") || len(text) > amp.MaxErrorText {
					t.Errorf("message %.40q (signed ERROR %v): %s carries it raw (%d bytes): %.80q", msg, asError, where, len(text), text)
				}
			}
		}
	}
}
