//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestServeMCPIsNeverOpen: serve refuses an MCP listener nobody
// authenticates on, a plain one off loopback, a token file others can
// read, a malformed one, MCP flags without --mcp-listen, and session caps
// under 1 (threat: an agent's tools reachable by anyone who can connect).
func TestServeMCPIsNeverOpen(t *testing.T) {
	db, key := serveStore(t)
	dir := t.TempDir()
	good := filepath.Join(dir, "tokens")
	os.WriteFile(good, []byte("did:web:a.example.org tok-0123456789abcdef0123456789abcdef\n"), 0o600)
	exposed := filepath.Join(dir, "exposed")
	os.WriteFile(exposed, []byte("did:web:a.example.org tok-0123456789abcdef0123456789abcdef\n"), 0o644)
	os.Chmod(exposed, 0o644)
	weak := filepath.Join(dir, "weak")
	os.WriteFile(weak, []byte("did:web:a.example.org short\n"), 0o600)
	base := []string{"--db", db, "--key", key, "--listen", "127.0.0.1:0"}
	for _, c := range []struct {
		args []string
		name string
		exit int
	}{
		{[]string{"--mcp-listen", "127.0.0.1:0"}, "usage", 2},
		{[]string{"--mcp-listen", "0.0.0.0:0", "--mcp-token-file", good}, "unsafe_listen", 1},
		{[]string{"--mcp-listen", "127.0.0.1:0", "--mcp-token-file", exposed}, "token_file_exposed", 1},
		{[]string{"--mcp-listen", "127.0.0.1:0", "--mcp-token-file", weak}, "invalid_token_file", 1},
		{[]string{"--mcp-token-file", good}, "usage", 2},
		{[]string{"--mcp-listen", "127.0.0.1:0", "--mcp-client-ca", good}, "usage", 2},
		{[]string{"--mcp-max-sessions", "8"}, "usage", 2},
		{[]string{"--mcp-listen", "127.0.0.1:0", "--mcp-token-file", good, "--mcp-max-principal-sessions", "0"}, "usage", 2},
	} {
		name, exit := serveFails(t, append(append([]string{}, base...), c.args...)...)
		if name != c.name || exit != c.exit {
			t.Fatalf("%v: %s exit %d, want %s exit %d", c.args, name, exit, c.name, c.exit)
		}
	}
}

// TestMCPCommandRefusesMisuse: the stdio command has no listener and
// needs a DID principal.
func TestMCPCommandRefusesMisuse(t *testing.T) {
	db, key := serveStore(t)
	for _, args := range [][]string{{"mcp", "--db", db, "--key", key, "--listen", "127.0.0.1:0"},
		{"mcp", "--db", db, "--key", key, "--principal", "not-a-did"}, {"mcp", "--db", db}} {
		if r := runCLI(t, "", append(args, "--json")...); r.code != 2 {
			t.Fatalf("%v: exit %d %s", args, r.code, r.stdout)
		}
	}
}
