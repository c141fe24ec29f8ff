package keyfile

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testkeys"
)

// TestSmallOrderPublicKeyFileCannotBeTrusted: an operator is handed a
// public key file (PEM or DER) as "the publisher's key" and runs
// ampbundle trust add, verify --trust or revoke with it. Before,
// ParsePublic checked only that it was a 32-byte Ed25519 key; for a key of
// small order crypto/ed25519.Verify accepts the forged signature
// R = identity, S = 0 on a large share of all messages (all of them, for
// the identity), so whoever wrote the file, or anybody, could sign as it.
// Expected: invalid_public_key for the file, its bytes and its did:key.
func TestSmallOrderPublicKeyFileCannotBeTrusted(t *testing.T) {
	dir := t.TempDir()
	for name, k := range testkeys.SmallOrderEd25519(t) {
		t.Run(name, func(t *testing.T) {
			der, err := x509.MarshalPKIXPublicKey(k)
			if err != nil {
				t.Fatal(err)
			}
			file := strings.NewReplacer(" ", "_", "(", "", ")", "", ",", "", "=", "", "+", "plus").Replace(name)
			for _, f := range []struct {
				kind string
				data []byte
			}{{"pem", PublicPEM(k)}, {"der", der}} {
				p := filepath.Join(dir, file+"."+f.kind)
				if err := os.WriteFile(p, f.data, 0o644); err != nil {
					t.Fatal(err)
				}
				if got, err := ParsePublic(p); !errors.Is(err, amp.ErrName(ErrInvalidPublicKey)) {
					t.Errorf("ParsePublic of a %s file: got key %x, err %v; want invalid_public_key", f.kind, got, err)
				}
				if got, err := ParsePublicKey(f.data); !errors.Is(err, amp.ErrName(ErrInvalidPublicKey)) {
					t.Errorf("ParsePublicKey of %s: got key %x, err %v; want invalid_public_key", f.kind, got, err)
				}
				// Given where a private key is needed, it is still told
				// apart as a public key file.
				if _, err := ParsePrivate(f.data); !errors.Is(err, amp.ErrName(ErrInvalidKeyFile)) || !strings.Contains(err.Error(), "public key where a private key is needed") {
					t.Errorf("ParsePrivate of a small-order %s public key: %v", f.kind, err)
				}
			}
			if got, err := ParsePublic(amp.DIDKey(k)); !errors.Is(err, amp.ErrName(ErrInvalidPublicKey)) {
				t.Errorf("ParsePublic of its did:key: got key %x, err %v; want invalid_public_key", got, err)
			}
		})
	}
	// A genuine key still reads.
	real := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{7}, 32)).Public().(ed25519.PublicKey)
	p := filepath.Join(dir, "real.pem")
	if err := os.WriteFile(p, PublicPEM(real), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := ParsePublic(p); err != nil || !got.Equal(real) {
		t.Fatalf("a genuine key: %x, %v", got, err)
	}
}
