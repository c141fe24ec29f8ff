package keyfile

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestPublicKeyGivenAsPrivateSaysSoFirst: a public key file (PEM or DER,
// as keygen --pub and openssl write it, readable by all) given where a
// private key is needed is refused as a public key, before any file-mode
// check (threat: "run chmod 600 on it" sending the operator to change the
// mode of the wrong file, and only then being told it is a public key).
func TestPublicKeyGivenAsPrivateSaysSoFirst(t *testing.T) {
	for _, name := range []string{"openssl-public.pem", "openssl-public.der"} {
		data, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []os.FileMode{0o644, 0o600} {
			p := filepath.Join(t.TempDir(), name)
			if err := os.WriteFile(p, data, mode); err != nil {
				t.Fatal(err)
			}
			os.Chmod(p, mode)
			_, err := ReadPrivate(p)
			if !errors.Is(err, amp.ErrName(ErrInvalidKeyFile)) || !strings.Contains(err.Error(), "public key where a private key is needed") {
				t.Errorf("%s mode %04o: %v", name, mode, err)
			}
		}
	}
	if runtime.GOOS == "windows" {
		return // modes are no access rights there: CLI-51's tests judge the access list
	}
	// A private key readable by others is still refused for its mode.
	data, err := os.ReadFile(filepath.Join("testdata", "openssl-plain.pem"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "k.pem")
	os.WriteFile(p, data, 0o644)
	os.Chmod(p, 0o644)
	if _, err := ReadPrivate(p); !errors.Is(err, amp.ErrName(ErrInsecureKeyFile)) {
		t.Errorf("leaky private key: %v", err)
	}
}

// TestPrivateKeyGivenAsPublicSaysSo: a private key file (PEM or DER,
// plain or encrypted, as keygen -o and openssl write it) given where a
// public key is needed ("verify --trust agent.key") is refused as a
// private key, naming the file keygen --pub writes, and the key is never
// shown (threat: "not one pem PUBLIC KEY block", which leaves the
// operator to guess that the wrong half of the pair was given, and an
// error that echoes private key bytes into a terminal or a log).
func TestPrivateKeyGivenAsPublicSaysSo(t *testing.T) {
	for _, name := range []string{"openssl-plain.pem", "openssl-plain.der", "openssl-scrypt-aes256cbc.pem", "openssl-pbkdf2-aes256cbc.der", "openssl-x25519.pem"} {
		p := filepath.Join("testdata", name)
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		for what, parse := range map[string]func() error{
			"ParsePublic":    func() error { _, err := ParsePublic(p); return err },
			"ParsePublicKey": func() error { _, err := ParsePublicKey(data); return err },
		} {
			err := parse()
			if !errors.Is(err, amp.ErrName(ErrInvalidPublicKey)) || !strings.Contains(err.Error(), "private key where a public key is needed") || !strings.Contains(err.Error(), "--pub") {
				t.Errorf("%s %s: %v", what, name, err)
			}
		}
	}
	// A public key still parses, and garbage is still not a private key.
	for _, name := range []string{"openssl-public.pem", "openssl-public.der"} {
		if _, err := ParsePublic(filepath.Join("testdata", name)); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	if _, err := ParsePublicKey([]byte{0x30, 0x03, 0x30, 0x01, 0x00}); err == nil || strings.Contains(err.Error(), "private key") {
		t.Errorf("garbage DER: %v", err)
	}
}
