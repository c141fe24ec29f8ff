package keyfile

import (
	"crypto/ecdh"
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

func TestPrivateRoundTripAndPermissions(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "k.pem")
	ed := ed25519.NewKeyFromSeed(make([]byte, 32))
	x, _ := ecdh.X25519().NewPrivateKey(make([]byte, 32))
	if err := WritePrivate(p, ed, x); err != nil {
		t.Fatal(err)
	}
	k, err := ReadPrivate(p)
	if err != nil || !k.Ed25519.Equal(ed) || !k.X25519.Equal(x) {
		t.Fatalf("round trip: %v", err)
	}
	if err := WritePrivate(p, ed); !errors.Is(err, amp.ErrName("file_exists")) {
		t.Fatalf("overwrite: %v", err)
	}
	if runtime.GOOS == "windows" {
		return // modes are no access rights there: CLI-51's tests judge the access list
	}
	for _, mode := range []os.FileMode{0o640, 0o604, 0o660, 0o666} {
		os.Chmod(p, mode)
		if _, err := ReadPrivate(p); !errors.Is(err, amp.ErrName("insecure_key_file")) {
			t.Fatalf("mode %o: %v", mode, err)
		}
	}
	os.Chmod(p, 0o400)
	if _, err := ReadPrivate(p); err != nil {
		t.Fatalf("mode 0400: %v", err)
	}
}

func TestParsePrivateRefuses(t *testing.T) {
	for name, data := range map[string]string{
		"empty":       "",
		"not pem":     "hello",
		"public key":  string(PublicPEM(ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey))),
		"bad pkcs8":   "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n",
		"trailing":    "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\ngarbage",
		"two ed25519": "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\n-----END PRIVATE KEY-----\n",
	} {
		if _, err := ParsePrivate([]byte(data)); !errors.Is(err, amp.ErrName("invalid_key_file")) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestParsePublic(t *testing.T) {
	pub := ed25519.NewKeyFromSeed(make([]byte, 32)).Public().(ed25519.PublicKey)
	p := filepath.Join(t.TempDir(), "pub.pem")
	if err := WritePublic(p, pub); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{p, amp.DIDKey(pub), amp.DIDKey(pub) + "#frag"} {
		got, err := ParsePublic(s)
		if err != nil || !got.Equal(pub) {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, s := range []string{"did:key:z6LShpNhGwSupbB7zjuivH156vhLJBDDzmQtA4BY9S94pe1K", "did:key:nope", filepath.Join(t.TempDir(), "missing")} {
		if _, err := ParsePublic(s); err == nil {
			t.Errorf("%s accepted", s)
		}
	}
}
