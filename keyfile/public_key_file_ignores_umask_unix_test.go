//go:build unix

package keyfile

import (
	"crypto/ed25519"
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// TestPublicKeyFileIgnoresSitesUmask: a site that runs keygen under
// umask 077 (no file of its users readable by others, the public key's
// too) got its --pub file created 0644 less the umask, 0600, until key
// files were written through a temporary file created 0600 and chmod'ed
// to 0644, which no umask limits: the public key file became readable by
// everyone whatever the site asked. The temporary file is now created with
// the file's mode, which the umask limits (docs/SPEC-DECISIONS.md,
// CLI-31). (syscall.Umask is process-wide: this test is not parallel and
// restores it.)
func TestPublicKeyFileIgnoresSitesUmask(t *testing.T) {
	old := syscall.Umask(0o077)
	defer syscall.Umask(old)
	p := filepath.Join(t.TempDir(), "k.pub")
	if err := WritePublic(p, testKey().Public().(ed25519.PublicKey)); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Mode().Perm(); got != 0o600 {
		t.Fatalf("public key file under umask 077 has mode %04o; want 0600 (0644 less the umask)", got)
	}
}
