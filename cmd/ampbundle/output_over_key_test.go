package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestOutputNeverReplacesTheCommandsOwnPrivateKeyFile: the threat: a slip
// of the hand (`-o` and `--key` naming the same file, tab completion
// picking the .key.pem next to the output, or another spelling of it: a
// link, "dir/../key") makes a writing command rename its output over the
// private key file it has just read. build, rotate and revoke replace
// their output without --force, so the publisher's only copy of its
// signing key would be destroyed, contrary to docs/CLI.md §1.11: "private
// key files ... never overwritten".
// Expected: a usage error before anything is written whenever -o is the
// same file (os.SameFile) as a key file the command reads; the key file is
// left untouched (CLI-27).
func TestOutputNeverReplacesTheCommandsOwnPrivateKeyFile(t *testing.T) {
	const created = "2026-11-22T12:00:00Z"
	for _, tc := range []struct {
		name string
		out  func(t *testing.T, key string) string // the -o spelling of the key file
		args func(key, out string) []string
	}{
		{"build", samePath, func(key, out string) []string {
			return []string{"build", filepath.Join(testdata, "geo"), "-o", out, "--key", key, "--created", created}
		}},
		{"build through a symlink", linkTo, func(key, out string) []string {
			return []string{"build", filepath.Join(testdata, "geo"), "-o", out, "--key", key, "--created", created}
		}},
		{"build through dir/..", dotDot, func(key, out string) []string {
			return []string{"build", filepath.Join(testdata, "geo"), "-o", out, "--key", key, "--created", created}
		}},
		{"build with the second of two keys", samePath, func(key, out string) []string {
			return []string{"build", filepath.Join(testdata, "geo"), "-o", out, "--key", sampleKeyIn(filepath.Dir(key), "acme-publisher"), "--key", key, "--created", created}
		}},
		{"rotate", samePath, func(key, out string) []string {
			return []string{"rotate", "--scope", "org.example", "--add", "next=" + samplePub("acme-publisher"), "-o", out, "--key", key, "--created", created}
		}},
		{"revoke", samePath, func(key, out string) []string {
			return []string{"revoke", "--scope", "org.example", "--revoke-bundle", "org.example.geo@1", "-o", out, "--key", key, "--created", created}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := sampleKey(t, "example-publisher")
			before, err := os.ReadFile(key)
			if err != nil {
				t.Fatal(err)
			}
			r := runCLI(t, nil, tc.args(key, tc.out(t, key))...)
			after, err := os.ReadFile(key)
			if err != nil {
				t.Fatalf("the private key file is gone after %s (exit %d): %v", tc.name, r.code, err)
			}
			if !bytes.Equal(before, after) {
				t.Fatalf("%s -o KEY --key KEY exited %d and replaced the private key file with its output (%d bytes); the signing key is lost", tc.name, r.code, len(after))
			}
			if r.code != 2 {
				t.Fatalf("%s -o KEY --key KEY exited %d, want the usage error (2): %s", tc.name, r.code, r.stderr)
			}
		})
	}
}

func samePath(_ *testing.T, key string) string { return key }

func linkTo(t *testing.T, key string) string {
	l := filepath.Join(t.TempDir(), "out.ampb")
	if err := os.Symlink(key, l); err != nil {
		t.Skipf("no symlinks here: %v", err)
	}
	return l
}

func dotDot(t *testing.T, key string) string {
	sub := filepath.Join(filepath.Dir(key), "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(sub, "..", filepath.Base(key))
}

// sampleKeyIn copies the committed test key name into dir, mode 0600.
func sampleKeyIn(dir, name string) string {
	data, err := os.ReadFile(filepath.Join(testdata, "keys", "TEST-ONLY-"+name+".key.pem"))
	if err != nil {
		panic(err)
	}
	p := filepath.Join(dir, name+".key.pem")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		panic(err)
	}
	return p
}

// TestKeygenPubOverExistingFileWritesNoPrivateKey: --pub naming the new
// private key file itself, or any file that exists, is refused before the
// private key is written: no key is left behind whose public half was not
// saved, and no file is overwritten.
func TestKeygenPubOverExistingFileWritesNoPrivateKey(t *testing.T) {
	for _, tc := range []struct {
		name string
		pub  func(dir, key string) string
		code int
	}{
		{"pub is the private key file", func(_, key string) string { return key }, 2},
		{"pub exists", func(dir, _ string) string {
			p := filepath.Join(dir, "taken.pem")
			if err := os.WriteFile(p, []byte("someone's file"), 0o644); err != nil {
				t.Fatal(err)
			}
			return p
		}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			key := filepath.Join(dir, "k.pem")
			pub := tc.pub(dir, key)
			var before []byte
			if pub != key {
				before, _ = os.ReadFile(pub)
			}
			r := runCLI(t, nil, "keygen", "-o", key, "--pub", pub)
			if r.code != tc.code {
				t.Fatalf("keygen --pub %s exited %d, want %d: %s", tc.name, r.code, tc.code, r.stderr)
			}
			if _, err := os.Lstat(key); err == nil {
				t.Fatalf("keygen refused --pub (%s) but left a private key file behind", tc.name)
			}
			if pub != key {
				if after, _ := os.ReadFile(pub); !bytes.Equal(before, after) {
					t.Fatal("keygen overwrote the existing --pub file")
				}
			}
		})
	}
}
