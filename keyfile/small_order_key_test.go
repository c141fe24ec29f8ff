package keyfile

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// smallOrderKeys reads keyfile/testdata/small-order-ed25519.txt: the 14
// encodings of the Ed25519 points of order dividing 8 and a non-canonical
// one, keys no one holds (docs/SPEC-DECISIONS.md AMP-14), by name. Each is
// checked to be one amp.CheckEd25519PublicKey refuses.
func smallOrderKeys(t testing.TB) map[string]ed25519.PublicKey {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "small-order-ed25519.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]ed25519.PublicKey{}
	for _, line := range strings.Split(string(data), "\n") {
		h, name, _ := strings.Cut(line, " ")
		if line == "" || line[0] == '#' {
			continue
		}
		k, err := hex.DecodeString(h)
		if err != nil || len(k) != ed25519.PublicKeySize || amp.CheckEd25519PublicKey(k) == nil {
			t.Fatalf("%s: not a 32-byte key amp.CheckEd25519PublicKey refuses", name)
		}
		out[name] = k
	}
	if len(out) != 15 {
		t.Fatalf("%d keys, want 15", len(out))
	}
	return out
}

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
	for name, k := range smallOrderKeys(t) {
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
