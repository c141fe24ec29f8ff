package client

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestProviderErrorNameIsNeverHandedOnRaw: a provider answers a
// CAP_INVOKE with a signed CAP_RESULT error whose name is its own text:
// terminal escapes, a forged log line, 10 KB, capitals, spaces. Invoke
// (and Call) made it the Name of the *amp.Error the embedder gets, which
// its Error() prints first and errors.Is compares, so an embedder that
// logs or shows the error wrote the provider's bytes as its own. A name
// that passes amp.ValidErrName is kept; any other becomes the code's
// name, the provider's own staying in the Result's Error.Name
// (docs/SPEC-DECISIONS.md TRANSPORT-18).
func TestProviderErrorNameIsNeverHandedOnRaw(t *testing.T) {
	for _, c := range []struct {
		name, want string
	}{
		{"\x1b[2J\x1b[31mkey_error", "bad_request"},
		{"ok\nlevel=ERROR msg=\"disk wiped\"", "bad_request"},
		{strings.Repeat("a", 10_000), "bad_request"},
		{"Usage", "bad_request"},
		{"not found", "bad_request"},
		{"quota_exhausted", "quota_exhausted"},
		{"", "bad_request"},
	} {
		p := newParties(t)
		tr := p.scripted(t, func(m *amp.Message, send *amp.Sender) ([]byte, error) {
			body, err := capability.Result{Status: capability.StatusError, Error: &capability.ResultError{Code: amp.CodeBadRequest, Name: c.name, Message: "refused"}}.Encode()
			if err != nil {
				return nil, err
			}
			_, out, err := send.Seal(context.Background(), amp.Draft{Type: amp.TypeCapResult, To: amp.To(m.From), ReplyTo: m.ID[:], Body: body})
			return out, err
		})
		cl := p.client(t, tr)
		id, err := capability.ParseID("org.example.count:1.0.0")
		if err != nil {
			t.Fatal(err)
		}
		res, _, err := cl.Invoke(context.Background(), capability.Invoke{Capability: id.Name, Version: id.Version, Params: []byte{0xa0}})
		var e *amp.Error
		if !errors.As(err, &e) || e.Code != amp.CodeBadRequest || string(e.Name) != c.want {
			t.Fatalf("provider name %.40q: Invoke's error %v, want name %s", c.name, err, c.want)
		}
		if strings.Contains(err.Error(), "\x1b") || strings.Contains(err.Error(), "\n") || len(err.Error()) > 200 {
			t.Fatalf("provider name %.40q: the error's text carries it: %.80q", c.name, err.Error())
		}
		if res == nil || res.Error == nil || res.Error.Name != c.name {
			t.Fatalf("provider name %.40q: the result no longer holds the provider's name", c.name)
		}
		_, err = Call[map[string]any](context.Background(), cl, "org.example.count:1.0.0", map[string]any{})
		if string(amp.NameOf(err)) != c.want {
			t.Fatalf("provider name %.40q: Call's error named %.40q, want %s", c.name, amp.NameOf(err), c.want)
		}
	}
}
