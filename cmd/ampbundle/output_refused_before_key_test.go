package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestOutputRefusedBeforeAnyKeyIsRead: CLI-101 says an -o FILE that is
// refused is refused before any key signs; the review of CLI-105 found
// that revoke, rotate, heartbeat and receipt read the key (asking for its
// passphrase) and signed the statement first, and judged the name only
// when writing. Now every writer judges the name first: with an
// encrypted key and no passphrase anywhere, a name that is no regular
// file (a folder here) is io_error, not key_encrypted.
func TestOutputRefusedBeforeAnyKeyIsRead(t *testing.T) {
	dir := t.TempDir()
	pass := filepath.Join(dir, "pass")
	if err := os.WriteFile(pass, []byte("correct horse\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	key := filepath.Join(dir, "enc.key")
	if r := runCLI(t, nil, "keygen", "-o", key, "--encrypt", "--passphrase-file", pass, "--json"); r.code != 0 {
		t.Fatalf("keygen: %d %s %s", r.code, r.stdout, r.stderr)
	}
	refused := filepath.Join(dir, "folder")
	if err := os.Mkdir(refused, 0o700); err != nil {
		t.Fatal(err)
	}
	bundleFile := filepath.Join(t.TempDir(), "t.ampb")
	mustRun(t, "build", filepath.Join(testdata, "translate"), "-o", bundleFile, "--key", sampleKey(t, "example-publisher"), "--created", "2026-11-01T00:00:00Z")
	for _, args := range [][]string{
		{"revoke", "--scope", "org.example", "--revoke-bundle", translateID + "@1"},
		{"rotate", "--scope", "org.example", "--add", "a=" + samplePub("example-publisher")},
		{"heartbeat", "--bundle-id", translateID, "--version", "1"},
		{"receipt", "--db", filepath.Join(dir, "no-store.db")},
		{"sign", bundleFile},
		{"build", filepath.Join(testdata, "translate"), "--created", "2026-11-01T00:00:00Z"},
	} {
		r := runCLI(t, nil, append(args[:len(args):len(args)], "--key", key, "-o", refused, "--json")...)
		if r.code == 0 {
			t.Fatalf("%s -o FOLDER: exit 0", args[0])
		}
		if got := errorCode(t, r); got != "io_error" {
			t.Errorf("%s -o FOLDER with an encrypted key and no passphrase: %s (%s), want io_error before the key is read", args[0], got, r.stdout)
		}
	}
}
