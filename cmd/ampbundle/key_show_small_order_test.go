package main

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/keyfile"
)

// TestKeyShowNamesASmallOrderPublicKeyFileAsSuch: a public key file whose
// key no one holds the private half of (the identity point, small order:
// TRUST-21) is refused by every reader. key show then fell through to the
// private key reader and told the operator the file "holds a public key
// where a private key is needed", which sends them looking for a private
// key instead of refusing the key they were handed. It must answer the
// public key's own refusal, invalid_public_key.
func TestKeyShowNamesASmallOrderPublicKeyFileAsSuch(t *testing.T) {
	small := make(ed25519.PublicKey, ed25519.PublicKeySize)
	small[0] = 1 // y = 1: the identity point
	path := filepath.Join(t.TempDir(), "publisher.pub.pem")
	if err := os.WriteFile(path, keyfile.PublicPEM(small), 0o644); err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "key", "show", path, "--json")
	if r.code != 1 || errorCode(t, r) != string(keyfile.ErrInvalidPublicKey) || strings.Contains(r.stdout+r.stderr, "private key is needed") {
		t.Fatalf("key show of a small-order public key file: exit %d, %s %s; want invalid_public_key", r.code, r.stdout, r.stderr)
	}
}
