package cliutil

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

func preparedTestApp() *cli.App {
	app := testApp()
	app.Commands = append(app.Commands, &cli.Command{Name: "trust", Subcommands: []*cli.Command{
		{Name: "add", Flags: []cli.Flag{&cli.StringFlag{Name: "db"}, &cli.StringFlag{Name: "scope"}}},
		{Name: "ls", Flags: []cli.Flag{&cli.StringFlag{Name: "db"}, &cli.BoolFlag{Name: "old", Hidden: true}}},
	}})
	env := &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	Prepare(app, env)
	return app
}

// TestCompleteFollowsTheCommandLine: the candidates are the flags of the
// command named so far (never a hidden one), its subcommands, the commands
// after "help", and nothing where a flag's value or an argument goes (the
// shell then completes file names).
func TestCompleteFollowsTheCommandLine(t *testing.T) {
	app := preparedTestApp()
	tests := []struct {
		words []string
		want  []string
	}{
		{[]string{""}, []string{"build", "fail", "trust", "help", "version", "completion"}},
		{[]string{"tr"}, []string{"trust"}},
		{[]string{"trust", ""}, []string{"add", "ls"}},
		{[]string{"trust", "add", "--"}, []string{"--db", "--scope", "--help"}},
		{[]string{"trust", "ls", "--"}, []string{"--db", "--help"}},
		{[]string{"build", "--k"}, []string{"--key"}},
		{[]string{"build", "--key", ""}, nil},
		{[]string{"build", "--key", "k.pem", "--o"}, []string{"--out"}},
		{[]string{"build", "--json", "--o"}, []string{"--out"}},
		{[]string{"build", "--", "--"}, nil},
		{[]string{"help", "trust", ""}, []string{"add", "ls"}},
		{[]string{"-"}, []string{"--version", "--json", "--help", "-h"}},
	}
	for _, tt := range tests {
		if got := Complete(app, tt.words); !slices.Equal(got, tt.want) {
			t.Errorf("%q: %q, want %q", tt.words, got, tt.want)
		}
	}
}

// TestCompleteOffersShellsAndSkipsGivenFlags: "completion <TAB>" offers
// the shells it writes scripts for, and a flag already given is not
// offered again unless it is repeatable (threat: a newcomer pressing TAB
// after "completion" and getting file names, or being offered --db a
// second time, which the parser then refuses as given twice).
func TestCompleteOffersShellsAndSkipsGivenFlags(t *testing.T) {
	app := testApp()
	app.Commands = append(app.Commands, &cli.Command{Name: "trust", Subcommands: []*cli.Command{
		{Name: "add", Flags: []cli.Flag{&cli.StringFlag{Name: "db", Aliases: []string{"d"}}, &cli.StringSliceFlag{Name: "scope"}, &cli.BoolFlag{Name: "json"}}},
	}})
	Prepare(app, &Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
	tests := []struct {
		words []string
		want  []string
	}{
		{[]string{"completion", ""}, []string{"bash", "zsh", "fish"}},
		{[]string{"completion", "f"}, []string{"fish"}},
		{[]string{"completion", "bash", ""}, nil},
		{[]string{"help", "completion", ""}, nil},
		{[]string{"trust", "add", "--db", "s.db", "--"}, []string{"--scope", "--json", "--help"}},
		{[]string{"trust", "add", "-d", "s.db", "--"}, []string{"--scope", "--json", "--help"}},
		{[]string{"trust", "add", "--db=s.db", "--json", "--scope", "a", "--"}, []string{"--scope", "--help"}},
		{[]string{"trust", "add", "-"}, []string{"--db", "-d", "--scope", "--json", "--help", "-h"}},
	}
	for _, tt := range tests {
		if got := Complete(app, tt.words); !slices.Equal(got, tt.want) {
			t.Errorf("%q: %q, want %q", tt.words, got, tt.want)
		}
	}
}

// TestNearestCommand: a typo one or two edits from a command (a swapped
// pair counting one) or a prefix of exactly one command gets it suggested;
// anything further, or a one-letter alias, gets no suggestion.
func TestNearestCommand(t *testing.T) {
	cmds := preparedTestApp().Commands
	tests := map[string]string{
		"biuld": "build", "buidl": "build", "bild": "build", "tru": "trust", "trusts": "trust",
		"versoin": "version", "x": "", "zzzzzz": "", "b": "build", "completions": "completion",
		strings.Repeat("a", 100): "",
	}
	for typed, want := range tests {
		if got := nearest(typed, cmds); got != want {
			t.Errorf("%q: %q, want %q", typed, got, want)
		}
	}
}
