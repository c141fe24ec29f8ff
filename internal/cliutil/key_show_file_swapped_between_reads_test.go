package cliutil

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/keyfile"
)

// TestKeyShowWhoseFileIsSwappedBetweenReadsShowsTheFileItRead: `key show`
// of a private key file opened and read the file twice, first to tell
// its kind and whether it is encrypted, then again by name to judge its
// mode and parse its keys. Someone who may rename files in the folder
// (a script walking a drop folder) could swap the file between the two:
// the command then printed "encrypted" from one file beside the did:key
// of another, and judged and showed a 0600 file put in the place of a
// 0644 one it had read. Now the file is opened once, through the
// command's opener, and everything shown and judged is that open's
// (docs/SPEC-DECISIONS.md CLI-96). The opener here swaps the file right
// after its first open; the command must open once and show the first
// file.
func TestKeyShowWhoseFileIsSwappedBetweenReadsShowsTheFileItRead(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("a file open without FILE_SHARE_DELETE cannot be replaced on Windows: no swap to make")
	}
	first := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32))
	other := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32))
	rand := bytes.NewReader(make([]byte, 1<<16))
	write := map[string]func(path string, k ed25519.PrivateKey) error{
		"private": func(p string, k ed25519.PrivateKey) error { return keyfile.WritePrivate(p, k) },
		"encrypted": func(p string, k ed25519.PrivateKey) error {
			return keyfile.WritePrivateEncrypted(p, []byte("pw"), rand, k)
		},
		"public": func(p string, k ed25519.PrivateKey) error {
			return keyfile.WritePublic(p, k.Public().(ed25519.PublicKey))
		},
		"private 0644": func(p string, k ed25519.PrivateKey) error {
			if err := keyfile.WritePrivate(p, k); err != nil {
				return err
			}
			return os.Chmod(p, 0o644)
		},
	}
	for _, tc := range []struct {
		name          string
		read, swapped string
		wantKind      string
		wantEncrypted bool
		wantErr       amp.ErrName
	}{
		{"private swapped for another private", "private", "private", "private", false, ""},
		{"encrypted swapped for a plain private", "encrypted", "private", "private", true, ""},
		{"plain private swapped for an encrypted", "private", "encrypted", "private", false, ""},
		{"readable by others swapped for owner-only", "private 0644", "private", "", false, keyfile.ErrInsecureKeyFile},
		{"public swapped for a private", "public", "private", "public", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, swap := filepath.Join(dir, "k.pem"), filepath.Join(dir, "swap.pem")
			if err := write[tc.read](path, first); err != nil {
				t.Fatal(err)
			}
			if err := write[tc.swapped](swap, other); err != nil {
				t.Fatal(err)
			}
			opens := 0
			open := func(p, what string) (*os.File, fs.FileInfo, error) {
				f, st, err := keyfile.OpenRegular(p, what)
				opens++
				if opens == 1 {
					if err := os.Rename(swap, path); err != nil { // the swap, right after the first open
						t.Fatal(err)
					}
				}
				return f, st, err
			}
			var stdout, stderr bytes.Buffer
			env := &Env{Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""), Now: time.Now,
				Getenv:       func(string) string { return "" },
				ReadPassword: func(string) ([]byte, error) { return []byte("pw"), nil }}
			app := &cli.App{Name: "ampbundle", Commands: []*cli.Command{Group("key", "", keyShowCommand(env, open))}}
			code := Run(context.Background(), app, env, []string{"ampbundle", "key", "show", "--json", path})
			if opens != 1 {
				t.Errorf("the key file was opened %d times; want 1", opens)
			}
			if tc.wantErr != "" { // --json: the error document is on stdout
				var doc ErrorJSON
				if code == 0 || json.Unmarshal(stdout.Bytes(), &doc) != nil || doc.Error.Code != string(tc.wantErr) {
					t.Fatalf("exit %d: %s %s; want %s", code, stdout.String(), stderr.String(), tc.wantErr)
				}
				return
			}
			if code != 0 {
				t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
			}
			var doc keyShowDoc
			if err := json.Unmarshal(stdout.Bytes(), &doc); err != nil {
				t.Fatal(err)
			}
			if want := amp.DIDKey(first.Public().(ed25519.PublicKey)); doc.DID != want || doc.Kind != tc.wantKind || doc.Encrypted != tc.wantEncrypted {
				t.Fatalf("shown %s key, encrypted %v, %s; want the file read: %s, %v, %s", doc.Kind, doc.Encrypted, doc.DID, tc.wantKind, tc.wantEncrypted, want)
			}
		})
	}
}
