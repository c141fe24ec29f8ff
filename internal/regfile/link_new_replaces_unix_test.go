//go:build unix

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// TestLinkNewNeverReplaces: a file, or a link (dangling too), put at the
// final name before the move is never replaced or followed: LinkNew
// reports fs.ErrExist and leaves both; on a free name the file is moved
// and the temporary name is gone.
func TestLinkNewNeverReplaces(t *testing.T) {
	for _, tc := range []struct {
		name  string
		plant func(out string) error
	}{
		{"file", func(out string) error { return os.WriteFile(out, []byte("theirs"), 0o600) }},
		{"dangling link", func(out string) error { return os.Symlink(filepath.Join(filepath.Dir(out), "victim"), out) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tmp, out := filepath.Join(dir, "tmp"), filepath.Join(dir, "out")
			if err := os.WriteFile(tmp, []byte("ours"), 0o600); err != nil {
				t.Fatal(err)
			}
			if err := tc.plant(out); err != nil {
				t.Fatal(err)
			}
			if err := LinkNew(tmp, out); !errors.Is(err, fs.ErrExist) {
				t.Fatalf("LinkNew over a %s: %v, want fs.ErrExist", tc.name, err)
			}
			if _, err := os.Stat(tmp); err != nil {
				t.Fatalf("the temporary file is gone after a refused move: %v", err)
			}
			if _, err := os.Lstat(filepath.Join(dir, "victim")); err == nil {
				t.Fatal("the link planted at the final name was followed")
			}
		})
	}
	dir := t.TempDir()
	tmp, out := filepath.Join(dir, "tmp"), filepath.Join(dir, "out")
	if err := os.WriteFile(tmp, []byte("ours"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := LinkNew(tmp, out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "ours" {
		t.Fatalf("out: %q, %v", b, err)
	}
	if _, err := os.Lstat(tmp); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the temporary name is left: %v", err)
	}
	if err := SyncDir(dir); err != nil {
		t.Fatalf("SyncDir: %v", err)
	}
}
