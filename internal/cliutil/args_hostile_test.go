package cliutil

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"
)

// CLI-24's argument handling (unknown.go): what a valid command
// line still does, and what a mistaken or hostile one is answered.

// argsApp is a program (Prepare adds its --json) with a plain command and
// group that has flags and an action of its own (as 'ampbundle receipt'
// and 'ampagent card' are).
func argsApp() *cli.App {
	ok := func(*cli.Context) error { return nil }
	return &cli.App{Name: "x", Commands: []*cli.Command{
		{Name: "import", Flags: []cli.Flag{
			&cli.StringFlag{Name: "db"}, &cli.BoolFlag{Name: "json"}, &cli.StringFlag{Name: "params"},
			&cli.StringSliceFlag{Name: "scope"}, &cli.StringFlag{Name: "passphrase"},
		}, Action: ok},
		{Name: "receipt", Flags: []cli.Flag{&cli.StringFlag{Name: "out", Aliases: []string{"o"}}, &cli.Uint64Flag{Name: "from"}},
			Action: ok, Subcommands: []*cli.Command{{Name: "verify", Action: ok}}},
	}}
}

func runArgs(args ...string) (code int, stderr string) {
	var out, errb bytes.Buffer
	code = Run(context.Background(), argsApp(), &Env{Stdout: &out, Stderr: &errb}, append([]string{"x"}, args...))
	return code, errb.String()
}

// TestMisplacedFlagIsNotCalledAnUnknownCommand: a flag the program or
// group does not have, given before the command word, is the usage error
// ("unknown flag --db"), never its value read as a mistyped command
// (threat: "x --passphrase hunter2 import F" answered `unknown command
// "hunter2"`, echoing a secret to the terminal and the logs, and sending
// the reader after a command they never typed; urfave/cli said "flag
// provided but not defined: -passphrase" before CLI-24).
func TestMisplacedFlagIsNotCalledAnUnknownCommand(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		want   string // the first line names it
		secret string // never shown
	}{
		{[]string{"--db", "s.db", "import", "F"}, "unknown flag --db", "s.db"},
		{[]string{"--passphrase", "hunter2", "import", "F"}, "unknown flag --passphrase", "hunter2"},
		{[]string{"receipt", "--frm", "3", "verify", "r.json"}, "unknown flag --frm", `"3"`},
	} {
		code, stderr := runArgs(tt.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || !strings.HasPrefix(first, "x: "+tt.want) || strings.Contains(stderr, tt.secret) {
			t.Errorf("%q: exit %d, first line %q, want it to start %q and not show %s", tt.args, code, first, tt.want, tt.secret)
		}
	}
}

// TestValidLinesAreNotRefused: command lines whose flag values look
// like commands or flags, repeated slices, "--" and help forms still run
// (threat: the new pre-checks refusing or misrouting a valid line).
func TestValidLinesAreNotRefused(t *testing.T) {
	for _, args := range [][]string{
		{"import", "--db", "import", "F"},
		{"import", "--db=import", "F"},
		{"import", "--", "import"},
		{"import", "--params=-x", "F"},
		{"import", "--params", "-x", "F"},
		{"import", "--params", "--", "F"},
		{"import", "--scope", "a", "--scope", "b", "F"},
		{"import", "--json", "--json", "F"},
		{"--json", "import", "F"},
		{"help", "import"},
		{"receipt", "--out", "verify"},
		{"receipt", "-o", "verify"},
		{"receipt", "--out=verify", "--from", "3"},
		{"receipt", "help", "verify"},
		{"receipt", "verify", "--help"},
		{"import", "--generate-bash-completion"},
	} {
		if code, stderr := runArgs(args...); code != 0 {
			t.Errorf("%q: exit %d %q", args, code, stderr)
		}
	}
}

// TestHostileArgumentIsEscapedBoundedAndCheap: a 1 MiB flag or
// command word with terminal controls and invalid UTF-8 is answered with
// an escaped, cut line, in about the time of a short one (threat: the
// suggestion driving the terminal, or a nearest-name search quadratic in
// the argument's length).
func TestHostileArgumentIsEscapedBoundedAndCheap(t *testing.T) {
	huge := strings.Repeat("d\x1b]52;c;\xff", 1<<20/8)
	for _, args := range [][]string{
		{"import", "--" + huge, "F"},
		{"import", "--" + huge + "=v", "F"},
		{huge, "--db", "s.db"},
		{"receipt", huge},
		{"import", strings.Repeat("-", 1<<20)},
	} {
		start := time.Now()
		code, stderr := runArgs(args...)
		if took := time.Since(start); took > 5*time.Second {
			t.Errorf("%d-byte argument took %v", len(args[0])+len(args[len(args)-1]), took)
		}
		raw := strings.Contains(stderr, "\x1b") || strings.Contains(stderr, "\xff")
		if code != 2 || len(stderr) > 1024 || raw {
			t.Errorf("exit %d, %d bytes of stderr, raw bytes shown: %v", code, len(stderr), raw)
		}
	}
}
