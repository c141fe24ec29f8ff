package cliutil

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/keyfile"
)

// TestKeyPathTerminalEscapesAreNotPrinted: a key file whose name carries
// terminal escapes (ESC ] 0 ; … BEL sets the window title; ESC [ 2 J
// clears the screen), handed to `key show` by a script that walks a folder
// others can write, had its name printed as given in `key show`'s text
// output and in the passphrase prompt of an encrypted key: the file's
// author drove the user's terminal. Both show the name through Sanitize
// (\x1b, \x07); JSON output escapes it already.
func TestKeyPathTerminalEscapesAreNotPrinted(t *testing.T) {
	dir := t.TempDir()
	name := "k\x1b]0;owned\x07\x1b[2J.pem"
	key := ed25519.NewKeyFromSeed(make([]byte, 32))
	plain := filepath.Join(dir, name)
	if err := keyfile.WritePrivate(plain, key); err != nil {
		t.Skip("this file system refuses the name:", err)
	}
	encrypted := filepath.Join(dir, "e"+name)
	if err := keyfile.WritePrivateEncrypted(encrypted, []byte("pw"), bytes.NewReader(make([]byte, 4096)), key); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"key show", []string{"key", "show", plain}},
		{"passphrase prompt", []string{"key", "show", encrypted}},
		{"key show --json", []string{"key", "show", "--json", plain}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr, prompts bytes.Buffer
			env := &Env{
				Stdout: &stdout, Stderr: &stderr, Stdin: strings.NewReader(""),
				Now: time.Now, Getenv: func(string) string { return "" },
				ReadPassword: func(prompt string) ([]byte, error) {
					prompts.WriteString(prompt)
					return []byte("pw"), nil
				},
			}
			app := &cli.App{Name: "ampbundle", Commands: []*cli.Command{KeyShowCommand(env)}}
			if code := Run(context.Background(), app, env, append([]string{"ampbundle"}, tc.args...)); code != 0 {
				t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
			}
			for what, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String(), "prompt": prompts.String()} {
				if strings.ContainsAny(out, "\x1b\x07") {
					t.Errorf("%s carries the file name's terminal escapes: %q", what, out)
				}
			}
			if !strings.Contains(stdout.String(), `k\x1b]0;owned\x07\x1b[2J.pem`) && !strings.Contains(stdout.String(), `k\u001b]0;owned\u0007\u001b[2J.pem`) {
				t.Errorf("the file name is not shown escaped: %q", stdout.String())
			}
		})
	}
}
