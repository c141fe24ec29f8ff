package cliutil

import (
	"errors"
	"flag"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// TestNewPassphraseRefusesMistypedOrEmptyTerminalEntry: a new key is never
// encrypted under a passphrase typed differently the second time, under
// an empty one, or after the terminal failed; only the same non-empty
// entry twice is taken.
func TestNewPassphraseRefusesMistypedOrEmptyTerminalEntry(t *testing.T) {
	set := flag.NewFlagSet("keygen", flag.ContinueOnError)
	set.String("passphrase-file", "", "")
	c := cli.NewContext(nil, set, nil)
	tests := []struct {
		name    string
		entries []string // "!" fails the read
		want    amp.ErrName
	}{
		{"same twice", []string{"correct horse", "correct horse"}, ""},
		{"mistyped", []string{"correct horse", "correct hose"}, "passphrase_mismatch"},
		{"empty twice", []string{"", ""}, "empty_passphrase"},
		{"terminal fails first", []string{"!"}, "key_unreadable"},
		{"terminal fails second", []string{"correct horse", "!"}, "key_unreadable"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			asked := 0
			env := &Env{Getenv: func(string) string { return "" }, ReadPassword: func(string) ([]byte, error) {
				e := tt.entries[asked]
				asked++
				if e == "!" {
					return nil, errors.New("no terminal")
				}
				return []byte(e), nil
			}}
			p, err := NewPassphrase(c, env)
			if tt.want == "" {
				if err != nil || string(p) != tt.entries[0] || asked != 2 {
					t.Fatalf("got %q, %v after %d prompts", p, err, asked)
				}
				return
			}
			if amp.NameOf(err) != tt.want || p != nil {
				t.Fatalf("got %q, %v; want %s", p, err, tt.want)
			}
		})
	}
}
