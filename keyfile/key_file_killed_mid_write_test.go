package keyfile

import (
	"crypto/ed25519"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// killMidWriteEnv makes TestKeyFileKilledMidWriteLeavesNoKey's helper
// process write a key file and die half-way through the write.
const killMidWriteEnv = "KEYFILE_TEST_KILL_MID_WRITE"

// TestKeyFileKilledMidWriteLeavesNoKey: keygen killed while it writes the
// key (a signal, an OOM kill, a power cut) left an empty or cut-off 0600
// file at the key's name, which every rerun then refused to overwrite
// (file_exists) and every reader refused as no key. The key is now written
// to a temporary file and linked into place only once complete
// (docs/SPEC-DECISIONS.md, CLI-29): a process that dies half-way through
// the write (os.Exit: no deferred clean-up runs) leaves nothing at the
// key's name, and a rerun writes the key.
func TestKeyFileKilledMidWriteLeavesNoKey(t *testing.T) {
	if p := os.Getenv(killMidWriteEnv); p != "" {
		w := systemSteps()
		w.writeData = func(f *os.File, data []byte) error {
			f.Write(data[:len(data)/2])
			f.Sync()
			os.Exit(3) // killed here
			return nil
		}
		writePrivate(w, p, ed25519.NewKeyFromSeed(make([]byte, 32)))
		os.Exit(0)
	}
	for _, tc := range []struct {
		name  string
		write func(path string) error
	}{
		{"plain", func(p string) error { return WritePrivate(p, testKey()) }},
		{"encrypted", func(p string) error { return WritePrivateEncrypted(p, []byte("pw"), zeroReader{}, testKey()) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "k.pem")
			cmd := exec.Command(os.Args[0], "-test.run=^TestKeyFileKilledMidWriteLeavesNoKey$", "-test.count=1")
			cmd.Env = append(os.Environ(), killMidWriteEnv+"="+p)
			err := cmd.Run()
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 3 {
				t.Fatalf("the helper was not killed mid-write: %v", err)
			}
			if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a write killed half-way left a file at the key's name: %v", err)
			}
			if err := tc.write(p); err != nil {
				t.Fatalf("the rerun after a killed write: %v", err)
			}
			if _, err := ReadPrivateWith(p, Options{Passphrase: func() ([]byte, error) { return []byte("pw"), nil }}); err != nil {
				t.Fatalf("the rerun's key: %v", err)
			}
		})
	}
}

// TestKeyFileWriteFailureLeavesNothing: a key file whose write fails (a
// full disk, an I/O error) half-way leaves no file at its name, no
// temporary file beside it, and a named error; while the bytes are being
// written, nothing is at the key's name yet.
func TestKeyFileWriteFailureLeavesNothing(t *testing.T) {
	for _, tc := range []struct {
		name  string
		write func(w writeSteps, path string) error
	}{
		{"private", func(w writeSteps, p string) error { return writePrivate(w, p, testKey()) }},
		{"encrypted", func(w writeSteps, p string) error {
			return writePrivateEncrypted(w, p, []byte("pw"), zeroReader{}, testKey())
		}},
		{"public", func(w writeSteps, p string) error { return writePublic(w, p, testKey().Public().(ed25519.PublicKey)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			p := filepath.Join(dir, "k.pem")
			var atNameMidWrite error
			w := systemSteps()
			w.writeData = func(f *os.File, data []byte) error {
				f.Write(data[:len(data)/2])
				_, atNameMidWrite = os.Lstat(p)
				return errors.New("no space left on device")
			}
			err := tc.write(w, p)
			if amp.NameOf(err) != ErrIOError {
				t.Fatalf("got %v; want %s", err, ErrIOError)
			}
			if !errors.Is(atNameMidWrite, os.ErrNotExist) {
				t.Fatalf("the key's name held a file while its bytes were being written: %v", atNameMidWrite)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				t.Errorf("a failed write left %s", e.Name())
			}
		})
	}
}

// TestMoveNewNeverReplaces: the move that puts a complete key file (or a
// bundle output without --force) into place refuses a name that holds a
// file, or a link to one or to nothing (never followed), and leaves both
// the file there and the temporary file untouched; into a free name it
// moves the temporary file.
func TestMoveNewNeverReplaces(t *testing.T) {
	dir := t.TempDir()
	tmp := filepath.Join(dir, "tmp")
	if err := os.WriteFile(tmp, []byte("new"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	dangling := filepath.Join(dir, "dangling")
	if err := os.Symlink(filepath.Join(dir, "nowhere"), dangling); err != nil {
		t.Skip("no symbolic links here:", err)
	}
	for _, out := range []string{file, dangling} {
		if err := moveNew(tmp, out); amp.NameOf(err) != ErrFileExists {
			t.Fatalf("%s: got %v; want %s", out, err, ErrFileExists)
		}
	}
	if b, err := os.ReadFile(file); err != nil || string(b) != "old" {
		t.Fatalf("the existing file changed: %q %v", b, err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "nowhere")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a dangling link was followed: %v", err)
	}
	out := filepath.Join(dir, "out")
	if err := moveNew(tmp, out); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(out); err != nil || string(b) != "new" {
		t.Fatalf("moved: %q %v", b, err)
	}
	if _, err := os.Lstat(tmp); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the temporary file is still there: %v", err)
	}
}

func testKey() ed25519.PrivateKey { return ed25519.NewKeyFromSeed(make([]byte, 32)) }

type zeroReader struct{}

func (zeroReader) Read(p []byte) (int, error) { clear(p); return len(p), nil }
