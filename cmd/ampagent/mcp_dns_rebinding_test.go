//go:build unix

package main

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

// TestMCPListenTakesTheAllowHostRule: `serve --mcp-listen` on loopback
// refuses a rebound Host as the catalog and metrics listeners do, and
// serves the names given with --allow-host (threat: DNS rebinding of a
// page to 127.0.0.1 against the MCP endpoint; before, MCP had the SDK's
// own check, which took no --allow-host name, so a proxy's name was
// refused there and served everywhere else: two rules for one attack).
func TestMCPListenTakesTheAllowHostRule(t *testing.T) {
	const token = "tok-0123456789abcdef0123456789abcdef"
	tokens := writeFile(t, "tokens", "did:web:a.example.org "+token+"\n")
	db, key := serveStore(t)
	doc := startServeDoc(t, "--db", db, "--key", key, "--allow", "*=org.example.",
		"--mcp-listen", "127.0.0.1:0", "--mcp-token-file", tokens, "--allow-host", "mcp.proxy.example")
	mcpURL, _ := doc["mcp"].(string)
	u, err := url.Parse(mcpURL)
	if err != nil || mcpURL == "" {
		t.Fatalf("no mcp URL: %v", doc)
	}
	post := func(host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, mcpURL, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`))
		req.Host = host
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		return res.StatusCode, res.Header.Get("Mcp-Session-Id")
	}
	for _, host := range []string{u.Host, "localhost:" + u.Port(), "mcp.proxy.example", "mcp.proxy.example:443"} {
		if code, sid := post(host); code != http.StatusOK || sid == "" {
			t.Errorf("Host %q: %d; a loopback or --allow-host name must reach MCP", host, code)
		}
	}
	for _, host := range []string{"rebind.attacker.example:" + u.Port(), "localhost.attacker.example", "other.proxy.example"} {
		if code, sid := post(host); code != http.StatusMisdirectedRequest || sid != "" {
			t.Errorf("Host %q: %d; want 421 (a rebound name)", host, code)
		}
	}
}
