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

// TestKeygenPathTerminalEscapesAreNotPrinted: keygen run by a script with
// -o naming a file whose name carries terminal escapes (ESC ] 0 ; … BEL
// sets the window title, ESC [ 2 J clears the screen; a name taken from a
// folder others can write) printed "wrote NAME" with the name as given,
// so the name's author drove the operator's terminal. The name is shown
// escaped, on success and in a refusal (the key exists already), on
// stdout and stderr, as key show shows it.
func TestKeygenPathTerminalEscapesAreNotPrinted(t *testing.T) {
	dir := t.TempDir()
	name := "k\x1b]0;owned\x07\x1b[2J.pem"
	key := filepath.Join(dir, name)
	if f, err := os.OpenFile(filepath.Join(dir, "probe"+name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600); err != nil {
		t.Skip("this file system refuses the name:", err)
	} else {
		f.Close()
	}
	for _, tc := range []struct {
		name string
		code int
	}{{"written", 0}, {"refused, the key exists", 1}} {
		t.Run(tc.name, func(t *testing.T) {
			r := runCLI(t, "", "keygen", "-o", key)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d: %s %s", r.code, tc.code, r.stdout, r.stderr)
			}
			for what, out := range map[string]string{"stdout": r.stdout, "stderr": r.stderr} {
				if strings.ContainsAny(out, "\x1b\x07") {
					t.Errorf("%s carries the file name's terminal escapes: %q", what, out)
				}
			}
			if tc.code == 0 && !strings.Contains(r.stdout, `k\x1b]0;owned\x07\x1b[2J.pem`) {
				t.Errorf("the file name is not shown escaped: %q", r.stdout)
			}
		})
	}
}
