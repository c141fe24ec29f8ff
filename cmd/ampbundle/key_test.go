package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEncryptedPublisherKey: a publisher keeps its key encrypted at rest.
// keygen --encrypt writes an encrypted PKCS#8 file; build reads it with the
// passphrase from a file or the environment, and without one says that a
// passphrase is missing (never "not a pkcs#8 key"); a wrong passphrase is
// named as such; key show prints the same did:key as keygen did.
func TestEncryptedPublisherKey(t *testing.T) {
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "pub.key.pem")
	r := runCLI(t, nil, "keygen", "-o", key, "--encrypt", "--passphrase-file", pass, "--json")
	if r.code != 0 {
		t.Fatalf("keygen: %d %s %s", r.code, r.stdout, r.stderr)
	}
	var gen struct{ DID string }
	if err := json.Unmarshal([]byte(r.stdout), &gen); err != nil || !strings.HasPrefix(gen.DID, "did:key:") {
		t.Fatalf("keygen output %q: %v", r.stdout, err)
	}
	data, _ := os.ReadFile(key)
	if !strings.Contains(string(data), "ENCRYPTED PRIVATE KEY") || strings.Contains(string(data), "BEGIN PRIVATE KEY") {
		t.Fatalf("keygen --encrypt wrote:\n%s", data)
	}
	src := filepath.Join("..", "..", "testdata", "bundles", "translate")
	out := filepath.Join(dir, "b.ampb")

	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // error name, or "" for success
	}{
		{"no passphrase", nil, nil, "key_encrypted"},
		{"wrong passphrase", map[string]string{"AMP_KEY_PASSPHRASE": "wrong"}, nil, "wrong_passphrase"},
		{"passphrase from the environment", map[string]string{"AMP_KEY_PASSPHRASE": "correct horse"}, nil, ""},
		{"passphrase from a file", nil, []string{"--passphrase-file", pass}, ""},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := out + string(rune('a'+i))
			args := append([]string{"build", src, "-o", o, "--key", key, "--created", "2026-11-01T00:00:00Z", "--json"}, tc.args...)
			r := runCLI(t, tc.env, args...)
			if tc.want == "" {
				if r.code != 0 {
					t.Fatalf("exit %d: %s", r.code, r.stdout)
				}
				return
			}
			if r.code != 1 || errorCode(t, r) != tc.want {
				t.Fatalf("exit %d, %s; want %s", r.code, r.stdout, tc.want)
			}
			if _, err := os.Stat(o); !os.IsNotExist(err) {
				t.Errorf("a refused build left %s behind", o)
			}
		})
	}

	r = runCLI(t, map[string]string{"AMP_KEY_PASSPHRASE": "correct horse"}, "key", "show", key, "--json")
	var show struct {
		Kind      string `json:"kind"`
		Encrypted bool   `json:"encrypted"`
		DID       string `json:"did"`
		PublicKey string `json:"public_key_pem"`
	}
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &show) != nil {
		t.Fatalf("key show: %d %s %s", r.code, r.stdout, r.stderr)
	}
	if show.Kind != "private" || !show.Encrypted || show.DID != gen.DID || !strings.Contains(show.PublicKey, "BEGIN PUBLIC KEY") {
		t.Fatalf("key show: %+v, keygen said %s", show, gen.DID)
	}
	if strings.Contains(r.stdout, "PRIVATE") {
		t.Fatal("key show printed private material")
	}
	// The human form names the file, the kind and the did.
	r = runCLI(t, map[string]string{"AMP_KEY_PASSPHRASE": "correct horse"}, "key", "show", key)
	if r.code != 0 || !strings.Contains(r.stdout, "private key, encrypted") || !strings.Contains(r.stdout, gen.DID) {
		t.Fatalf("key show: %d %q", r.code, r.stdout)
	}
	// A public key file, PEM or DER, shows the same did without a passphrase.
	pubFile := filepath.Join(dir, "pub.pem")
	if err := os.WriteFile(pubFile, []byte(show.PublicKey), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runCLI(t, nil, "key", "show", pubFile, "--json")
	if r.code != 0 || !strings.Contains(r.stdout, gen.DID) || !strings.Contains(r.stdout, `"public"`) {
		t.Fatalf("key show of a public key: %d %s", r.code, r.stdout)
	}
	// A passphrase file others can read is refused, as a key file is.
	loose := filepath.Join(dir, "loose")
	os.WriteFile(loose, []byte("correct horse\n"), 0o644)
	os.Chmod(loose, 0o644)
	if r := runCLI(t, nil, "key", "show", key, "--passphrase-file", loose, "--json"); r.code != 1 || errorCode(t, r) != "insecure_key_file" {
		t.Fatalf("loose passphrase file: %d %s", r.code, r.stdout)
	}
	if r := runCLI(t, nil, "keygen", "-o", filepath.Join(dir, "x"), "--passphrase-file", pass); r.code != 2 {
		t.Fatalf("--passphrase-file without --encrypt: exit %d", r.code)
	}
}

// TestDERPublisherKey: a DER PKCS#8 key (as `openssl pkey -outform DER`
// writes) is a key, not "no pem private key".
func TestDERPublisherKey(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "keyfile", "testdata", "openssl-plain.der"))
	if err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(t.TempDir(), "k.der")
	if err := os.WriteFile(key, data, 0o600); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "key", "show", key, "--json")
	if r.code != 0 || !strings.Contains(r.stdout, "did:key:z6Mkpm8Q7TYPxnp8UgerYH8ZjUc7wr4nyteMwg8yvkxRjQDo") {
		t.Fatalf("key show of a der key: %d %s", r.code, r.stdout)
	}
}
