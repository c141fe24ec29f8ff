package main

import (
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestResultErrorNameCannotForgeTheCLIErrorCode: a hostile agent answers
// CAP_INVOKE with a signed CAP_RESULT {status: error, error: {code: 4001,
// name: N}} where N is any text it likes: "usage" (the CLI's own code for
// a usage mistake, exit 2), "wrong_sender" (the client's own refusal of a
// reply from another agent, after which the CLI hints that --to names
// another agent), 10,000 bytes, or words with spaces and capitals. docs/CLI.md
// §3.6 keeps the provider's name for CAP_RESULT errors (handler_failed,
// invalid_result, ...) only when it is a bounded snake_case name that is
// none of the CLI's or the client's own names; otherwise the code's name,
// the peer's name kept in the details (CLI-25).
func TestResultErrorNameCannotForgeTheCLIErrorCode(t *testing.T) {
	var name string
	url, did := hostileAgent(t, func(m *amp.Message) amp.Draft {
		body, err := capability.Result{Status: capability.StatusError,
			Error: &capability.ResultError{Code: amp.CodeBadRequest, Name: name, Message: "refused"}}.Encode()
		if err != nil {
			t.Fatal(err)
		}
		return amp.Draft{Type: amp.TypeCapResult, Body: body}
	})
	key, _ := keygen(t, t.TempDir(), "caller.pem")
	for _, name = range []string{"usage", "wrong_sender", strings.Repeat("a", 10000), "Not A Name"} {
		r := runCLI(t, "", "invoke", url, "--key", key, "--to", did, "--id", "org.example.x:1.0.0", "--params", "{}", "--json")
		code, _ := errorDoc(t, r)
		if r.code != 1 {
			t.Errorf("name %.20q: exit %d, want 1", name, r.code)
		}
		if code == "usage" || code == "wrong_sender" || len(code) > 64 || strings.ContainsAny(code, " ABCDEFGHIJKLMNOPQRSTUVWXYZ") {
			t.Errorf("name %.20q: the --json error code is the peer's %.40q", name, code)
		}
		h := runCLI(t, "", "invoke", url, "--key", key, "--to", did, "--id", "org.example.x:1.0.0", "--params", "{}")
		if strings.Contains(h.stderr, keyShowHint) {
			t.Errorf("name %.20q: the peer's error name makes the CLI doubt --to:\n%s", name, h.stderr)
		}
	}
}
