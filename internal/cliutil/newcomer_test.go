package cliutil

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
)

// newcomerApp is a small program with a command, a group and flags, run as
// Run runs it (its output in the returned buffers).
func newcomerApp() *cli.App {
	return &cli.App{Name: "x", Commands: []*cli.Command{
		{Name: "import", Flags: []cli.Flag{
			&cli.StringFlag{Name: "db"}, &cli.BoolFlag{Name: "json"}, &cli.BoolFlag{Name: "allow-downgrade"},
			&cli.StringFlag{Name: "out", Aliases: []string{"o"}},
		}, Action: func(*cli.Context) error { return nil }},
		{Name: "trust", Subcommands: []*cli.Command{
			{Name: "add", Flags: []cli.Flag{&cli.StringFlag{Name: "db"}}, Action: func(*cli.Context) error { return nil }},
		}},
	}}
}

func runNewcomer(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb}
	code = Run(context.Background(), newcomerApp(), env, append([]string{"x"}, args...))
	return code, out.String(), errb.String()
}

// TestMistypedCommandIsNamedBeforeTheFlagsAfterIt: a mistyped command is
// the usage error, with its suggestion, whatever flags follow it (threat:
// "imprt FILE --db S" answered "flag provided but not defined: -db",
// sending a newcomer to look for a flag that is fine).
func TestMistypedCommandIsNamedBeforeTheFlagsAfterIt(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"imprt", "translate.ampb", "--db", "registry.db"}, `unknown command "imprt"; did you mean import?`},
		{[]string{"imprt", "--db", "registry.db", "translate.ampb"}, `unknown command "imprt"; did you mean import?`},
		{[]string{"--json", "imprt", "--dbb", "x"}, `unknown command "imprt"; did you mean import?`},
		{[]string{"trust", "ad", "--db", "s.db", "K"}, `unknown command "ad"; did you mean add?`},
		{[]string{"frobnicate", "--db", "s.db"}, `unknown command "frobnicate"`},
	} {
		code, _, stderr := runNewcomer(tt.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || first != "x: "+tt.want {
			t.Errorf("%q: exit %d, first line %q, want %q", tt.args, code, first, tt.want)
		}
	}
	// A group's own help, and words after "--", are no commands.
	if code, _, stderr := runNewcomer("import", "--", "imprt"); code != 0 {
		t.Errorf("import -- imprt: exit %d %q", code, stderr)
	}
}

// TestUnknownFlagIsShownAsTypedWithTheNearest: an unknown flag is named as
// it was typed, escaped, with the nearest flag of the command (threat:
// "--dbb" shown as "-dbb" with no suggestion, and a flag carrying terminal
// controls driving the terminal when echoed).
func TestUnknownFlagIsShownAsTypedWithTheNearest(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"import", "--dbb", "s.db", "F"}, "unknown flag --dbb; did you mean --db?"},
		{[]string{"import", "F", "-dbb=s.db"}, "unknown flag -dbb; did you mean --db?"},
		{[]string{"import", "F", "--allow-downgrad"}, "unknown flag --allow-downgrad; did you mean --allow-downgrade?"},
		{[]string{"import", "F", "--zzzzzzzz"}, "unknown flag --zzzzzzzz"},
		{[]string{"trust", "add", "--d", "s.db", "K"}, "unknown flag --d; did you mean --db?"},
		{[]string{"import", "--d\x1b[2Jb", "F"}, `unknown flag --d\x1b[2Jb`},
	} {
		code, stdout, stderr := runNewcomer(tt.args...)
		first, _, _ := strings.Cut(stderr, "\n")
		if code != 2 || first != "x: "+tt.want || stdout != "" {
			t.Errorf("%q: exit %d, first line %q, want %q", tt.args, code, first, tt.want)
		}
		if strings.Contains(stderr, "\x1b") || strings.Contains(stderr, "provided but not defined") {
			t.Errorf("%q: %q", tt.args, stderr)
		}
	}
	for _, ok := range [][]string{
		{"import", "--db", "s.db", "F", "--json"},
		{"import", "-o", "out", "F"},
		{"import", "--help"},
		{"import", "--db", "--dbb", "F"}, // "--dbb" is the value of --db
	} {
		if code, _, stderr := runNewcomer(ok...); code != 0 {
			t.Errorf("%q: exit %d %q", ok, code, stderr)
		}
	}
}

// TestSwitchBesideItsExplicitValueIsRefusedInEitherOrder: "--json=false
// --json" is refused as "--json --json=false" is (threat: the order of two
// contradicting words deciding, silently, whether a script gets JSON).
func TestSwitchBesideItsExplicitValueIsRefusedInEitherOrder(t *testing.T) {
	for _, tt := range []struct {
		args []string
		bad  bool
	}{
		{[]string{"import", "--json=false", "--json", "F"}, true},
		{[]string{"import", "--json", "--json=false", "F"}, true},
		{[]string{"import", "--json=true", "--json", "F"}, true},
		{[]string{"import", "--json=false", "--json=false", "F"}, true},
		{[]string{"import", "--json", "--json", "F"}, false},
		{[]string{"import", "--json=false", "F"}, false},
	} {
		code, _, stderr := runNewcomer(tt.args...)
		if bad := code == 2; bad != tt.bad {
			t.Errorf("%q: exit %d %q, want refused=%v", tt.args, code, stderr, tt.bad)
		}
		if tt.bad && !strings.Contains(stderr, "flag --json is given more than once") {
			t.Errorf("%q: %q", tt.args, stderr)
		}
	}
}

// TestInterruptedExitsWith130AndSaysSo: an Interruptedf error exits 130
// with its message, and with --json the error document "interrupted"
// (threat: Ctrl-C ending a command with no word of what it left behind).
func TestInterruptedExitsWith130AndSaysSo(t *testing.T) {
	app := &cli.App{Name: "x", Commands: []*cli.Command{{Name: "import", Flags: []cli.Flag{&cli.BoolFlag{Name: "json"}},
		Action: func(*cli.Context) error { return Interruptedf("interrupted: nothing was imported") }}}}
	var out, errb bytes.Buffer
	if code := Run(context.Background(), app, &Env{Stdout: &out, Stderr: &errb}, []string{"x", "import"}); code != ExitInterrupted || errb.String() != "x: interrupted: nothing was imported\n" {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
	out.Reset()
	if code := Run(context.Background(), app, &Env{Stdout: &out, Stderr: &errb}, []string{"x", "import", "--json"}); code != ExitInterrupted || !strings.Contains(out.String(), `"code": "interrupted"`) {
		t.Fatalf("--json: exit %d, stdout %q", code, out.String())
	}
}

// TestCauseThatRepeatsTheMessageIsNotShown: a plain cause whose last part
// the message already ends with is left out; one that adds something (an
// OS error) is shown (threat: "over a compile limit: X: …: over a
// limit: X", the same reason read twice).
func TestCauseThatRepeatsTheMessageIsNotShown(t *testing.T) {
	limit := errors.New("offlineschema: loading artifact a.json puts the compile over a limit: a document nested more than 128 deep")
	e := amp.Named(0, "invalid_schema", "schema %q is over a compile limit loading %q: %s", "s.json", "a.json", "a document nested more than 128 deep").WithCause(limit)
	if got := humanError(e); strings.Count(got, "nested more than 128 deep") != 1 {
		t.Errorf("said twice: %q", got)
	}
	osErr := amp.Named(0, "io_error", "cannot open the bundle").WithCause(errors.New("open x.ampb: no such file or directory"))
	if got := humanError(osErr); !strings.HasSuffix(got, ": open x.ampb: no such file or directory") {
		t.Errorf("cause lost: %q", got)
	}
}
