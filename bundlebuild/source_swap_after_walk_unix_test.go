//go:build unix

package bundlebuild

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/bundle"
)

// TestSourceFileSwappedAfterWalkIsRefused: the attack: someone who can
// write in the source folder (a shared CI workspace, a checkout another job
// also uses) replaces a schema file once walkSource has checked it (Lstat:
// a regular file) and before it is read. Reads that follow links (the
// schema index, diskLoader.Load, fileSource.Open when the bundle is
// written) would check, hash, sign and ship an outside file — any JSON
// object is a valid schema, e.g. a cloud credentials file — and an open
// that waits for a writer would block the build for ever on a FIFO.
// Expected: every read goes beneath the folder (os.Root), opens without
// waiting and takes only the regular file the walk listed (os.SameFile):
// the build is refused, naming the file (BUILD-4).
func TestSourceFileSwappedAfterWalkIsRefused(t *testing.T) {
	secret := filepath.Join(t.TempDir(), "credentials.json") // outside the source folder
	const marker = "hunter2-outside-secret"
	if err := os.WriteFile(secret, []byte(`{"client_secret":"`+marker+`"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	other := filepath.Join(t.TempDir(), "other.json") // outside the folder, renamed in
	if err := os.WriteFile(other, []byte(`{"type":"string"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		swap func(extra string) error // extra is gone when it is called
	}{
		{"symlink to a file outside the folder", func(extra string) error { return os.Symlink(secret, extra) }},
		{"symlink to another schema of the folder", func(extra string) error {
			return os.Symlink(filepath.Join("..", "..", "capabilities", "org.example.translate.text", "1.0.0", "input.schema.json"), extra)
		}},
		{"FIFO without a writer", func(extra string) error { return syscall.Mkfifo(extra, 0o644) }},
		// Written before the original is removed, so that it cannot reuse
		// its inode number (os.SameFile compares device and inode).
		{"another file renamed into its place", func(extra string) error { return os.Rename(other, extra) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir, extra := sourceWithExtraSchema(t)
			swapped := false
			hooks := buildHooks{inFlight: func(int64, int64) {
				// Called as the first schema is admitted, after the walk
				// and before any schema is read: the attacker's moment.
				if swapped {
					return
				}
				swapped = true
				if err := os.Remove(extra); err != nil {
					t.Error(err)
				}
				if err := tc.swap(extra); err != nil {
					t.Error(err)
				}
			}}
			k := testKey(1)
			type loaded struct {
				d   *bundle.Draft
				err error
			}
			done := make(chan loaded, 1)
			go func() {
				d, err := loadSource(dir, SourceOptions{CreatedAt: time.Unix(1_700_000_000, 0), Signer: k.Public().(ed25519.PublicKey), Workers: 1}, hooks)
				done <- loaded{d, err}
			}()
			var r loaded
			select {
			case r = <-done:
			case <-time.After(10 * time.Second):
				if f, err := os.OpenFile(extra, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
					f.Close() // unblock a stuck open, so that the goroutine ends
				}
				t.Fatal("a schema swapped after the walk blocked the build")
			}
			if !swapped {
				t.Fatal("the hook never ran: the test no longer reaches the window between walk and read")
			}
			if r.err != nil {
				if !strings.Contains(r.err.Error(), "schemas/extra/notes.json") {
					t.Fatalf("refused without naming the swapped file: %v", r.err)
				}
				return // refused, naming the file: what should happen
			}
			var out bytes.Buffer
			if _, err := bundle.Write(&out, r.d, []ed25519.PrivateKey{k}, bundle.WriteOptions{}); err == nil && bytes.Contains(out.Bytes(), []byte(marker)) {
				t.Fatalf("a source file swapped for a symlink to %s after the walk was read through the link: the signed bundle (%d bytes) carries that outside file", secret, out.Len())
			}
			t.Fatal("LoadSource accepted a source file swapped after the walk")
		})
	}
}

// sourceWithExtraSchema copies the translate sample and adds a schema,
// schemas/extra/notes.json, for the attacker to swap.
func sourceWithExtraSchema(t *testing.T) (dir, extra string) {
	t.Helper()
	dir = copyTree(t, filepath.Join("..", "testdata", "bundles", "translate"))
	extra = filepath.Join(dir, "schemas", "extra", "notes.json")
	if err := os.MkdirAll(filepath.Dir(extra), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(extra, []byte(`{"type":"object"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, extra
}
