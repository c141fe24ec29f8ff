package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestKeyShowDIDPrintsOnlyTheDID: key show --did prints the did:key that
// keygen printed, alone on one line, so a script can take it with $(…)
// (threat: a caller pasting a placeholder or the wrong DID as --to, as the
// README once had it); a public key file gives the same DID.
func TestKeyShowDIDPrintsOnlyTheDID(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "agent.key")
	r := runCLI(t, "", "keygen", "-o", key)
	if r.code != 0 {
		t.Fatalf("keygen: %d %s", r.code, r.stderr)
	}
	_, rest, _ := strings.Cut(r.stdout, "did: ")
	did, _, _ := strings.Cut(rest, "\n")
	if !strings.HasPrefix(did, "did:key:z6Mk") {
		t.Fatalf("keygen printed %q", r.stdout)
	}
	r = runCLI(t, "", "key", "show", "--did", key)
	if r.code != 0 || r.stdout != did+"\n" {
		t.Fatalf("key show --did: %d %q, want %q", r.code, r.stdout, did+"\n")
	}
	pub := filepath.Join(dir, "agent.pub")
	show := runCLI(t, "", "key", "show", key)
	pem := show.stdout[strings.Index(show.stdout, "-----BEGIN"):]
	pem = pem[:strings.Index(pem, "-----END PUBLIC KEY-----")+len("-----END PUBLIC KEY-----")] + "\n"
	if err := os.WriteFile(pub, []byte(pem), 0o644); err != nil {
		t.Fatal(err)
	}
	if r := runCLI(t, "", "key", "show", "--did", pub); r.code != 0 || r.stdout != did+"\n" {
		t.Fatalf("key show --did of the public key: %d %q", r.code, r.stdout)
	}
}
