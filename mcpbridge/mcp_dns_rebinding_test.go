package mcpbridge

import (
	"net/http"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/internal/hostguard"
)

// TestMCPRebindingHostIsRefusedByTheSharedHostRule: the MCP endpoint on a
// loopback listener answers only localhost, a loopback IP literal or a name
// of its Host rule (HTTPOptions.Hosts, ampagent's --allow-host).
//
// Attack: DNS rebinding. A page of rebind.attacker.example, its name
// resolved to 127.0.0.1 after load, posts to
// http://rebind.attacker.example:PORT/mcp. Without a token it learns only
// the refusal; with a token a local host program holds (or one day a
// browser-held credential) it would drive tools as that principal.
//
// Defence (MCP-5 as amended): the endpoint checks Host with the module's
// one rule (internal/hostguard) before it authenticates, reads or admits
// anything; the refusal is 421 JSON, the Host not echoed. The SDK's own
// check (which took no names, and echoed the Host in its 403) is off, so a
// name the operator gives reaches MCP exactly as it reaches the catalog.
func TestMCPRebindingHostIsRefusedByTheSharedHostRule(t *testing.T) {
	hosts, err := hostguard.New([]string{"MCP.proxy.example"})
	if err != nil {
		t.Fatal(err)
	}
	_, srv := sessionEnv(t, HTTPOptions{Hosts: hosts})
	port := srv.URL[strings.LastIndex(srv.URL, ":")+1:]
	post := func(host, token string) reply {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL, strings.NewReader(initBody))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var b strings.Builder
		buf := make([]byte, 1<<16)
		n, _ := resp.Body.Read(buf)
		b.Write(buf[:n])
		return reply{resp.StatusCode, resp.Header.Get(sessionHeader), resp.Header, b.String()}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "localhost", "[::1]:" + port, "mcp.proxy.example", "MCP.PROXY.example:443"} {
		if r := post(host, testToken); r.status != http.StatusOK || r.session == "" {
			t.Errorf("Host %q: %d %q; the operator's own name must be served", host, r.status, r.body)
		}
	}
	for _, host := range []string{"rebind.attacker.example:" + port, "rebind.attacker.example", "localhost.attacker.example",
		"10.0.0.1:" + port, "proxy.example"} {
		for _, token := range []string{testToken, "no-such-token-0123456789abcdef0123"} {
			r := post(host, token)
			if r.status != http.StatusMisdirectedRequest || r.session != "" || strings.Contains(r.body, "attacker") ||
				!strings.Contains(r.body, "host_refused") || r.header.Get("Content-Type") != "application/json" {
				t.Errorf("Host %q: %d %q; want 421 host_refused, no session, the Host not echoed", host, r.status, r.body)
			}
		}
	}
}
