package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestKeygenPubRefusedAfterKeyLeavesOrphanKey: the threat: CLI-27 says
// keygen refuses --pub naming -o, or anything that keeps the public key
// from being written, before the private key is written. Compared by
// spelling (filepath.Clean) and checked with Lstat, another spelling of
// the same file (through a linked folder) passes, as does --pub in a
// folder that does not exist or cannot be written. Then the private key
// is written, the public key fails (file_exists on the key just written;
// or io_error), the command exits non-zero before it prints the did:key,
// and a fresh private key file is left whose public half was not saved and
// whose did was never shown, and a rerun is refused because -o now
// exists. Expected: --pub is created (O_EXCL) before the private key and
// removed again when the key cannot be written (CLI-27, amended in review
// 34): a refused keygen leaves no file, and -o through a linked folder is
// the usage error "the same file" (exit 2).
func TestKeygenPubRefusedAfterKeyLeavesOrphanKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		pub  func(t *testing.T, dir string) string // dir holds the key at dir/real/k.pem
		code int
	}{
		{"pub is the key file through a linked folder", func(t *testing.T, dir string) string {
			link := filepath.Join(dir, "link")
			if err := os.Symlink(filepath.Join(dir, "real"), link); err != nil {
				t.Skipf("no symlinks here: %v", err)
			}
			return filepath.Join(link, "k.pem")
		}, 2},
		{"pub in a folder that does not exist", func(_ *testing.T, dir string) string {
			return filepath.Join(dir, "missing", "k.pub.pem")
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "real"), 0o755); err != nil {
				t.Fatal(err)
			}
			key := filepath.Join(dir, "real", "k.pem")
			pub := tc.pub(t, dir)
			r := runCLI(t, nil, "keygen", "-o", key, "--pub", pub)
			if r.code == 0 {
				t.Fatalf("keygen -o %s --pub %s succeeded: %s", key, pub, r.stdout)
			}
			if _, err := os.Lstat(key); err == nil {
				t.Fatalf("keygen -o %s --pub %s exited %d after writing the private key: a key file is left whose public half was not saved and whose did:key was never printed (%s)", key, pub, r.code, r.stderr)
			}
			if _, err := os.Lstat(pub); err == nil {
				t.Fatalf("keygen -o %s --pub %s exited %d and left the --pub file behind", key, pub, r.code)
			}
			if r.code != tc.code {
				t.Fatalf("keygen exited %d, want %d: %s", r.code, tc.code, r.stderr)
			}
		})
	}
}
