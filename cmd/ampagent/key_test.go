package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEncryptedAgentKey: an agent identity kept encrypted at rest. keygen
// --encrypt writes both keys encrypted; key show (given the passphrase
// file a service would use) reports the same did:key and the X25519 key;
// without a passphrase the error says so, with a hint.
func TestEncryptedAgentKey(t *testing.T) {
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "agent.key.pem")
	r := runCLI(t, "", "keygen", "-o", key, "--encrypt", "--passphrase-file", pass, "--json")
	if r.code != 0 {
		t.Fatalf("keygen: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var gen struct{ DID string }
	if err := json.Unmarshal([]byte(r.stdout), &gen); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(key)
	if strings.Count(string(data), "BEGIN ENCRYPTED PRIVATE KEY") != 2 {
		t.Fatalf("keygen --encrypt wrote:\n%s", data)
	}
	r = runCLI(t, "", "key", "show", key, "--passphrase-file", pass, "--json")
	var show struct {
		DID       string `json:"did"`
		X25519    bool   `json:"x25519"`
		Encrypted bool   `json:"encrypted"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &show) != nil || show.DID != gen.DID || !show.X25519 || !show.Encrypted {
		t.Fatalf("key show: %d %s (keygen: %s)", r.code, r.stdout, gen.DID)
	}
	r = runCLI(t, "", "key", "show", key)
	if r.code != 1 || !strings.Contains(r.stderr, "encrypted") || !strings.Contains(r.stderr, "--passphrase-file") {
		t.Fatalf("no passphrase: %d %q", r.code, r.stderr)
	}
	if code, _ := errorDoc(t, runCLI(t, "", "key", "show", key, "--json")); code != "key_encrypted" {
		t.Fatalf("no passphrase: %s", code)
	}
}
