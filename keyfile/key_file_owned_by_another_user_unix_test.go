//go:build unix

package keyfile

import (
	"crypto/ed25519"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestPrivateKeyOwnedByAnotherUserIsRefused: an agent or publisher
// running as root (a service, a container) is handed a mode 0600 key
// file that another account owns. That account can read the key, so
// whatever it signs is signed as us, and it can rewrite the file with a
// key of its choosing; the mode bits alone said nothing against it. The
// file is refused with insecure_key_file before it is parsed. Only root
// can give a file away, so this test needs root (the README's test
// command runs as root in CI); the rule itself runs everywhere in
// TestOwnerModeJudgement.
func TestPrivateKeyOwnedByAnotherUserIsRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving a file to another user needs root; TestOwnerModeJudgement covers the rule")
	}
	path := filepath.Join(t.TempDir(), "agent.key")
	if err := WritePrivate(path, ed25519.NewKeyFromSeed(make([]byte, 32))); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrivate(path); err != nil {
		t.Fatalf("our own 0600 key: %v", err)
	}
	if err := os.Chown(path, 65534, 65534); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadPrivate(path); !errors.Is(err, amp.ErrName("insecure_key_file")) {
		t.Fatalf("a key file another user owns was read: %v", err)
	}
}
