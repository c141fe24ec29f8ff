package keyfile

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/internal/regfile"
)

// killAfterWriteEnv makes TestKilledKeygenLeavesNoKeyCopy's helper
// process write a whole key file and die before it is linked; with
// namedTempEnv set, through a named temporary file.
const (
	killAfterWriteEnv = "KEYFILE_TEST_KILL_AFTER_WRITE"
	namedTempEnv      = "KEYFILE_TEST_NAMED_TEMP"
)

// noUnnamed makes writeNew take the named temporary file, as on a system
// without O_TMPFILE.
func noUnnamed(string, os.FileMode) (*os.File, error) { return nil, regfile.ErrNoUnnamed }

// keyCopies lists the files in dir other than keep that hold want.
func keyCopies(t *testing.T, dir, keep string, want []byte) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var copies []string
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err == nil && bytes.Equal(b, want) && e.Name() != keep {
			copies = append(copies, e.Name())
		}
	}
	return copies
}

// TestKilledKeygenLeavesNoKeyCopy: keygen wrote the private key to a
// named temporary file (.ampbundle-key-DIGITS.tmp) in the key's folder,
// linked it into place, then removed the temporary name. A keygen killed
// after the bytes were written left a complete copy of the private key
// under a hidden name that nothing removed (the bundle writers' clean-up
// runs only in bundle output folders): it survived the operator's `rm` of
// a revoked key and went into backups. Now, where the system can (Linux,
// O_TMPFILE), the key is written to a file without a name, linked into
// place once complete: a kill leaves nothing. Where it cannot, the named
// file stays, and the next keygen in that folder removes it once a day old
// (docs/SPEC-DECISIONS.md, CLI-33).
func TestKilledKeygenLeavesNoKeyCopy(t *testing.T) {
	if p := os.Getenv(killAfterWriteEnv); p != "" {
		w := systemSteps()
		if os.Getenv(namedTempEnv) != "" {
			w.createUnnamed = noUnnamed
		}
		w.writeData = func(f *os.File, data []byte) error {
			f.Write(data)
			f.Sync()
			os.Exit(3) // killed here: the bytes are all written
			return nil
		}
		writePrivate(w, p, testKey())
		os.Exit(0)
	}
	want, err := privatePEM(testKey())
	if err != nil {
		t.Fatal(err)
	}
	kill := func(t *testing.T, p string, named bool) {
		t.Helper()
		cmd := exec.Command(os.Args[0], "-test.run=^TestKilledKeygenLeavesNoKeyCopy$", "-test.count=1")
		cmd.Env = append(os.Environ(), killAfterWriteEnv+"="+p)
		if named {
			cmd.Env = append(cmd.Env, namedTempEnv+"=1")
		}
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 3 {
			t.Fatalf("the helper was not killed after its write: %v", err)
		}
	}

	t.Run("unnamed", func(t *testing.T) {
		dir := t.TempDir()
		p := filepath.Join(dir, "k.pem")
		f, err := regfile.CreateUnnamed(dir, 0o600)
		if errors.Is(err, regfile.ErrNoUnnamed) {
			t.Skip("no O_TMPFILE here: the named subtest covers this system")
		}
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		kill(t, p, false)
		if c := keyCopies(t, dir, "k.pem", want); len(c) != 0 {
			t.Errorf("a killed keygen left a copy of the private key at %v", c)
		}
	})

	t.Run("named", func(t *testing.T) {
		if runtime.GOOS == "windows" {
			t.Skip("a file's owner cannot be read here: the copy stays (CLI-33)")
		}
		w := systemSteps()
		w.createUnnamed = noUnnamed
		dir := t.TempDir()
		kill(t, filepath.Join(dir, "k.pem"), true)
		left := keyCopies(t, dir, "k.pem", want)
		if len(left) != 1 || !isTempName(left[0]) {
			t.Fatalf("the named temporary file a killed keygen leaves: %v", left)
		}
		clock := time.Now()
		w.now = func() time.Time { return clock }
		// A day old is stale; younger, it may be a live keygen's.
		if err := writePrivate(w, filepath.Join(dir, "a.pem"), testKey()); err != nil {
			t.Fatal(err)
		}
		if c := keyCopies(t, dir, "a.pem", want); len(c) != 1 {
			t.Fatalf("a fresh temporary file was removed, or another left: %v", c)
		}
		clock = clock.Add(staleTempAge + time.Minute)
		if err := writePrivate(w, filepath.Join(dir, "b.pem"), testKey()); err != nil {
			t.Fatal(err)
		}
		// Only a.pem and b.pem hold the key now.
		if c := keyCopies(t, dir, "a.pem", want); len(c) != 1 || c[0] != "b.pem" {
			t.Errorf("the next keygen a day later left the killed one's copy: %v", c)
		}
	})
}

// TestStaleKeyTempCleanUpRemovesOnlyOurs: the clean-up a keygen runs in
// the key's folder removes only our own stale temporary key files: never
// a file of another name, a young one, a link named as ours (nor what it
// leads to) or a folder.
func TestStaleKeyTempCleanUpRemovesOnlyOurs(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a file's owner cannot be read here: nothing is removed")
	}
	dir := t.TempDir()
	outside := filepath.Join(t.TempDir(), "victim")
	if err := os.WriteFile(outside, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-2 * staleTempAge)
	mk := func(name string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, old, old); err != nil {
			t.Fatal(err)
		}
		return p
	}
	stale := mk(tempPrefix + "123" + tempSuffix)
	kept := []string{
		mk(".ampbundle-key-12x" + tempSuffix),
		mk(tempPrefix + "99999999999" + tempSuffix), // more digits than ours
		mk("k.pem"),
		filepath.Join(dir, tempPrefix+"7"+tempSuffix), // young
		filepath.Join(dir, tempPrefix+"8"+tempSuffix), // a link
		filepath.Join(dir, tempPrefix+"9"+tempSuffix), // a folder
		outside,
	}
	if err := os.WriteFile(kept[3], []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, kept[4]); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(kept[5], 0o700); err != nil {
		t.Fatal(err)
	}
	removeStaleTemps(dir, time.Now())
	if _, err := os.Lstat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a stale temporary key file stayed: %v", err)
	}
	for _, p := range kept {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s was removed: %v", filepath.Base(p), err)
		}
	}
}
