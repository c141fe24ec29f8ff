package main

import (
	"strings"
	"testing"
)

// TestPlainHTTPToARemoteAgentNeedsConsent: 'ampagent invoke
// http://192.0.2.1:9 ...' would send the params, and read the result and
// any unsigned refusal, in clear across the network, where anyone on the
// path reads them and answers in the agent's place with unsigned errors.
// Every other plain channel of the project is loopback only unless the
// operator says otherwise: amp:// (--unsafe-plain-tcp, TRANSPORT-2),
// serve's plain listeners (--unsafe-listen, docs/CLI.md §3.4), OCI
// registries (OCI-4), etcd (FLEET-5). 'query' and 'invoke' refuse plain
// http:// to a host that is not loopback before dialing, with a named
// error (unsafe_plain_http), unless --unsafe-plain-http (CLI-25).
func TestPlainHTTPToARemoteAgentNeedsConsent(t *testing.T) {
	key, _ := keygen(t, t.TempDir(), "caller.pem")
	_, did := keygen(t, t.TempDir(), "provider.pem")
	r := runCLI(t, "", "invoke", "http://192.0.2.1:9", "--key", key, "--to", did, "--id", "org.example.x:1.0.0",
		"--params", "{}", "--wait", "1s", "--json")
	if r.code == 0 {
		t.Fatalf("exit 0: %+v", r)
	}
	if !strings.Contains(r.stdout+r.stderr, "plain") {
		t.Errorf("plain http:// to a remote agent was dialed, not refused:\n%s%s", r.stdout, r.stderr)
	}
}
