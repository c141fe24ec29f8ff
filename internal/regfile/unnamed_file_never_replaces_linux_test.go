//go:build linux

package regfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
)

// TestUnnamedFileNeverReplacesNorFollows: a key written as a file without
// a name (CreateUnnamed) gets its name by LinkUnnamed, which must never
// replace a file already at that name, nor follow a link planted there
// (to write the key where the planter reads it); the file gets mode less
// the umask, as one created at its name would; and where /proc is not
// the proc file system (a plain folder a local user fills with links)
// nothing is linked through it: CreateUnnamed is ErrNoUnnamed
// (docs/SPEC-DECISIONS.md, CLI-33). (syscall.Umask is process-wide: this
// test is not parallel.)
func TestUnnamedFileNeverReplacesNorFollows(t *testing.T) {
	dir := t.TempDir()
	old := syscall.Umask(0o027)
	t.Cleanup(func() { syscall.Umask(old) })
	f, err := CreateUnnamed(dir, 0o644)
	if errors.Is(err, ErrNoUnnamed) {
		t.Skip("no O_TMPFILE on this file system")
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString("key"); err != nil {
		t.Fatal(err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 0 {
		t.Fatalf("an unnamed file has a name: %v", entries)
	}
	taken := filepath.Join(dir, "taken")
	if err := os.WriteFile(taken, []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	victim := filepath.Join(t.TempDir(), "victim")
	link := filepath.Join(dir, "link")
	if err := os.Symlink(victim, link); err != nil {
		t.Fatal(err)
	}
	for _, out := range []string{taken, link} {
		if err := LinkUnnamed(f, out); !errors.Is(err, fs.ErrExist) {
			t.Errorf("LinkUnnamed to %s: %v, want fs.ErrExist", filepath.Base(out), err)
		}
	}
	if b, _ := os.ReadFile(taken); string(b) != "mine" {
		t.Errorf("the file at a taken name was replaced: %q", b)
	}
	if _, err := os.Lstat(victim); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a link planted at the name was followed: %v", err)
	}
	out := filepath.Join(dir, "k.pem")
	if err := LinkUnnamed(f, out); err != nil {
		t.Fatal(err)
	}
	st, err := os.Lstat(out)
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(out); string(b) != "key" || st.Mode().Perm() != 0o640 {
		t.Errorf("the linked file: %q mode %v, want \"key\" mode 0640", b, st.Mode().Perm())
	}

	fake := filepath.Join(t.TempDir(), "proc")
	if err := os.Mkdir(fake, 0o700); err != nil {
		t.Fatal(err)
	}
	for i := range 1024 {
		if err := os.Symlink(filepath.Join(dir, "planted"), filepath.Join(fake, strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
	if g, err := createUnnamed(dir, 0o600, fake+"/"); !errors.Is(err, ErrNoUnnamed) {
		if g != nil {
			g.Close()
		}
		t.Errorf("CreateUnnamed under a fake /proc: %v, want ErrNoUnnamed", err)
	}
	if err := linkUnnamed(f, filepath.Join(dir, "k2.pem"), fake+"/"); err == nil || errors.Is(err, fs.ErrExist) {
		t.Errorf("LinkUnnamed through a fake /proc: %v, want a refusal", err)
	}
}
