package keyfile

import (
	"errors"
	"os"
	"path/filepath"
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
