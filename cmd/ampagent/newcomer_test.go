package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/cliutil/clitest"
	"github.com/ampbundle/ampbundle/transport/amphttp"
)

// preparedApp is the program's app as it runs: with the help, version and
// completion commands.
func preparedApp() *cli.App {
	env := &cliutil.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	app := newApp(env)
	cliutil.Prepare(app, env)
	return app
}

// TestHelpFlagPrintsUsageAndExitsZero: --help, -h and "help" on the
// program and on every command and subcommand print its usage on stdout,
// nothing on stderr, and exit 0 (threat: a newcomer's first "ampagent
// --help" printing "flag: help requested" and exiting 2).
func TestHelpFlagPrintsUsageAndExitsZero(t *testing.T) {
	calls := [][]string{{"--help"}, {"-h"}, {"help"}}
	for _, p := range clitest.CommandPaths(preparedApp()) {
		calls = append(calls,
			append(slices.Clone(p), "--help"),
			append(slices.Clone(p), "-h"),
			append([]string{"help"}, p...))
	}
	if len(calls) < 3*10 {
		t.Fatalf("only %d calls: the command list is incomplete", len(calls))
	}
	for _, args := range calls {
		r := runCLI(t, "", args...)
		if r.code != 0 || !strings.Contains(r.stdout, "USAGE:") || r.stderr != "" {
			t.Errorf("ampagent %s: exit %d, stderr %q, stdout %.80q", strings.Join(args, " "), r.code, r.stderr, r.stdout)
		}
	}
}

// TestVersionCommandMatchesVersionFlag: "ampagent version" prints what
// --version prints, with --json too.
func TestVersionCommandMatchesVersionFlag(t *testing.T) {
	for _, extra := range [][]string{nil, {"--json"}} {
		flag := runCLI(t, "", append([]string{"--version"}, extra...)...)
		cmd := runCLI(t, "", append([]string{"version"}, extra...)...)
		if cmd.code != 0 || cmd.stdout != flag.stdout || !strings.Contains(cmd.stdout, "ampagent") {
			t.Errorf("version %v: exit %d %q, --version printed %q", extra, cmd.code, cmd.stdout, flag.stdout)
		}
	}
}

// TestUnknownCommandSuggestsNearest: "ampagent qurey" is a usage error
// naming what was typed and the nearest command.
func TestUnknownCommandSuggestsNearest(t *testing.T) {
	r := runCLI(t, "", "qurey", "http://127.0.0.1:1")
	if r.code != 2 || !strings.Contains(r.stderr, `unknown command "qurey"; did you mean query?`) {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestCompletionOffersEveryCommandsFlags: bash, running the script that
// "ampagent completion bash" prints, offers the flags of the command typed
// (threat: "ampagent query --<TAB>" offering nothing).
func TestCompletionOffersEveryCommandsFlags(t *testing.T) {
	app := preparedApp()
	for _, p := range clitest.CommandPaths(app) {
		c := app.Command(p[0])
		for _, n := range p[1:] {
			c = c.Command(n)
		}
		got := cliutil.Complete(app, append(slices.Clone(p), "--"))
		for _, f := range c.Flags {
			if vf, ok := f.(cli.VisibleFlag); ok && !vf.IsVisible() {
				continue // a hidden flag is not offered
			}
			if want := "--" + f.Names()[0]; !slices.Contains(got, want) {
				t.Errorf("%s --<TAB>: %q lacks %s", strings.Join(p, " "), got, want)
			}
		}
	}
	if got := clitest.BashComplete(t, "ampagent", "TestRunAsAmpagent", "query", "--t"); !slices.Contains(got, "--to") || !slices.Contains(got, "--to-doc") || slices.Contains(got, "--key") {
		t.Errorf("bash: ampagent query --t<TAB>: %q", got)
	}
}

// TestRunAsAmpagent is the program when clitest.BashComplete runs it.
func TestRunAsAmpagent(t *testing.T) {
	clitest.AsProgram("ampagent", func(ctx context.Context, args []string) int {
		return run(ctx, cliutil.OS(), args)
	})
}

// TestManPageIsSectionOne: the man page is a section 1 page with the usual
// header.
func TestManPageIsSectionOne(t *testing.T) {
	files, err := cliutil.DocFiles(preparedApp())
	if err != nil {
		t.Fatal(err)
	}
	if man := string(files["man/ampagent.1"]); !strings.Contains(man, ".TH AMPAGENT 1 ") {
		t.Fatalf("man page header: %.120q", man)
	}
}

// TestQueryAcceptsTheMessagesURL: the URL "ampagent serve" and the demo
// print (ending in /amp/v1/messages, with or without a trailing slash) is
// accepted by query and invoke as the agent's URL (threat: a newcomer
// pasting the printed URL and getting "no such route").
func TestQueryAcceptsTheMessagesURL(t *testing.T) {
	ta := startAgents(t)
	for _, u := range []string{ta.url + amphttp.MessagesPath, ta.url + amphttp.MessagesPath + "/"} {
		r := runCLI(t, "", "query", u, "--key", ta.caller, "--to", ta.did, "--capability", translateCap, "--json")
		if r.code != 0 || !strings.Contains(r.stdout, translateCap+":2.1.0") {
			t.Errorf("query %s: exit %d %s %s", u, r.code, r.stdout, r.stderr)
		}
		r = runCLI(t, "", "invoke", u, "--key", ta.caller, "--to", ta.did, "--id", translateCap+":2.0.0", "--params", params2, "--json")
		if r.code != 0 {
			t.Errorf("invoke %s: exit %d %s %s", u, r.code, r.stdout, r.stderr)
		}
	}
}

// TestWrongRecipientNamesWhoAnswered: a reply from another agent than
// --to names that agent's DID (threat: "the reply is not from the
// provider", leaving the caller to guess that --to is wrong and which DID
// is right).
func TestWrongRecipientNamesWhoAnswered(t *testing.T) {
	ta := startAgents(t)
	_, other := keygen(t, t.TempDir(), "other.pem")
	r := runCLI(t, "", "query", ta.url, "--key", ta.caller, "--to", other, "--capability", translateCap)
	if r.code != 1 || !strings.Contains(r.stderr, ta.did) || !strings.Contains(r.stderr, other) {
		t.Fatalf("exit %d, stderr %q (want both %s and %s named)", r.code, r.stderr, ta.did, other)
	}
}
