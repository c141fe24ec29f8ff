package cliutil

import (
	"bytes"
	"crypto/ed25519"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/keyfile"
)

// TestOutputThatIsThePassphraseFileIsRefused
//
// Slip (or a script that takes -o from a variable): `build`, `sign`,
// `receipt`, `revoke`, `rotate` and `heartbeat` rename their output into
// place whatever is there (docs/CLI.md §1.9), and CLI-27 kept only the
// private key file out of -o's reach. `-o pass.txt --passphrase-file
// pass.txt` read the passphrase, signed, and replaced the passphrase
// file with the bundle or statement: the only copy of the passphrase of
// an encrypted publisher key was gone, and the key with it. Now
// ReadPrivateKey, which every command reading a private key goes
// through, refuses (usage, exit 2) an -o that is the --passphrase-file
// by os.SameFile (a link or another spelling counts), before the key is
// read and before anything is written, whether or not the key is
// encrypted; the passphrase file is left as it was.
func TestOutputThatIsThePassphraseFileIsRefused(t *testing.T) {
	dir := t.TempDir()
	key := filepath.Join(dir, "k.pem")
	if err := keyfile.WritePrivate(key, ed25519.NewKeyFromSeed(make([]byte, 32))); err != nil {
		t.Fatal(err)
	}
	pass := filepath.Join(dir, "pass.txt")
	secret := []byte("correct horse battery staple\n")
	if err := os.WriteFile(pass, secret, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.txt")
	if err := os.Symlink(pass, link); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	other := filepath.Join(dir, "bundle.amp")
	tests := []struct {
		name      string
		out       string
		wantUsage bool
	}{
		{"-o is the passphrase file", pass, true},
		{"-o is another spelling of it", filepath.Join(dir, ".", "pass.txt"), true},
		{"-o is a link to it", link, true},
		{"-o is another file", other, false},
		{"-o is stdout", "-", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := flag.NewFlagSet("build", flag.ContinueOnError)
			set.String("out", tt.out, "")
			set.String("passphrase-file", pass, "")
			c := cli.NewContext(nil, set, nil)
			keys, err := ReadPrivateKey(c, &Env{}, key)
			if tt.wantUsage {
				if !IsUsage(err) || keys != nil {
					t.Fatalf("got %v, %v; want a usage error", keys, err)
				}
			} else if err != nil || keys == nil || keys.Ed25519 == nil {
				t.Fatalf("got %v, %v; want the key", keys, err)
			}
			if got, err := os.ReadFile(pass); err != nil || !bytes.Equal(got, secret) {
				t.Fatalf("the passphrase file changed: %q, %v", got, err)
			}
		})
	}
}
