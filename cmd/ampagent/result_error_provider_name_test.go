package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestProviderErrorNameTheClientRefusedStillReachesDetails: a provider's
// CAP_RESULT error name that amp.ValidErrName refuses ("Bad Name", a
// terminal escape, 10,000 bytes) is given the code's name by the client
// (TRANSPORT-18), and the CLI judged that name, which passed: the
// provider's name was lost, not moved to details.provider_name as
// docs/CLI.md promises (CLI-25). The CLI judges the name as the provider
// sent it: the code's name, the provider's in details.provider_name
// (bounded to 64 bytes; JSON escapes what it holds).
func TestProviderErrorNameTheClientRefusedStillReachesDetails(t *testing.T) {
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
	for _, tc := range []struct{ sent, code, provider string }{
		{"Bad Name", "bad_request", "Bad Name"},
		{"\x1b[31mx", "bad_request", "\x1b[31mx"},
		{strings.Repeat("a", 10000), "bad_request", strings.Repeat("a", maxProviderErrorName)},
		{"wrong_sender", "bad_request", "wrong_sender"},
		{"", "bad_request", ""},
		{"refused_here", "refused_here", ""},
	} {
		name = tc.sent
		r := runCLI(t, "", "invoke", url, "--key", key, "--to", did, "--id", "org.example.x:1.0.0", "--params", "{}", "--json")
		var doc struct {
			Error struct {
				Code    string `json:"code"`
				Details *struct {
					ProviderName string `json:"provider_name"`
				} `json:"details"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
			t.Fatalf("name %.20q: stdout is not the error document: %v\n%s", tc.sent, err, r.stdout)
		}
		got := ""
		if doc.Error.Details != nil {
			got = doc.Error.Details.ProviderName
		}
		if doc.Error.Code != tc.code || got != tc.provider {
			t.Errorf("name %.20q: code %q, details.provider_name %.20q; want %q, %.20q", tc.sent, doc.Error.Code, got, tc.code, tc.provider)
		}
	}
}
