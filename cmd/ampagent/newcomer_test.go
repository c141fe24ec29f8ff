package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
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
// header, a fixed date (reproducible, never empty), and the sections a
// reader of a man page looks for: every visible command with its
// description, the exit status of docs/CLI.md §1.1, the signals, the files,
// and no "help" command among the commands (threat: "man ampagent"
// finding a page with an empty date, commands without a word of what they
// do, no exit status for a script's author, and a "help, h" section).
func TestManPageIsSectionOne(t *testing.T) {
	app := preparedApp()
	files, err := cliutil.DocFiles(app)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "CLI.md"))
	if err != nil {
		t.Fatal(err)
	}
	clitest.CheckManPage(t, app, "ampagent", cliutil.ManDate, string(files["man/ampagent.1"]), string(doc), []string{"SIGHUP", "SIGTERM"}, func(code string) bool { return strings.HasPrefix(code, "10") || code == "130" }) // 10 and 11: ampbundle sync only; 130: ampbundle import only
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

// TestWrongToWithEncryptNamesWhoAnswered: an encrypted call (--encrypt,
// as the README's invoke uses) to another agent than --to, which answers
// only that it cannot decrypt, names the agent that answered — its DID
// verified by a signed PONG — beside --to, and hints at 'ampagent key show
// --did'; with --json the error document carries both DIDs (threat:
// "message cannot be decrypted (amp 3001 UNAUTHORIZED)" alone, leaving a
// newcomer to guess that --to is wrong, and which DID is right).
func TestWrongToWithEncryptNamesWhoAnswered(t *testing.T) {
	ta := startAgents(t)
	_, other := keygen(t, t.TempDir(), "other.pem")
	args := []string{"invoke", ta.url, "--key", ta.caller, "--to", other, "--encrypt", "--id", translateCap + ":2.0.0", "--params", params2}
	r := runCLI(t, "", args...)
	if r.code != 1 || !strings.Contains(r.stderr, "the agent that answered is "+ta.did+", not --to "+other) ||
		!strings.Contains(r.stderr, "hint: --to must be the DID of the agent at the URL: 'ampagent key show --did") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = runCLI(t, "", append(args, "--json")...)
	if code, amp := errorDoc(t, r); r.code != 1 || code != "unauthorized" || amp != 3001 ||
		!strings.Contains(r.stdout, `"from": "`+ta.did+`"`) || !strings.Contains(r.stdout, `"provider": "`+other+`"`) {
		t.Fatalf("--json: exit %d %s", r.code, r.stdout)
	}
	// The right --to still works encrypted: nothing is probed then.
	if r := runCLI(t, "", "invoke", ta.url, "--key", ta.caller, "--to", ta.did, "--encrypt", "--id", translateCap+":2.0.0", "--params", params2); r.code != 0 {
		t.Fatalf("right --to: exit %d %s", r.code, r.stderr)
	}
	// Without --encrypt the reply's own signature names the sender.
	r = runCLI(t, "", "query", ta.url, "--key", ta.caller, "--to", other, "--capability", translateCap)
	if r.code != 1 || !strings.Contains(r.stderr, "the agent that answered is "+ta.did+", not --to "+other) || !strings.Contains(r.stderr, "key show --did") {
		t.Fatalf("plain: exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestMalformedDIDKeyToIsRefusedBeforeSending: a --to did:key that does
// not decode (did:key:zBAD, a cut or mistyped DID) is a usage error (exit
// 2) naming --to and why, before any message is sent (threat: the request
// signed and sent to an agent that can never answer as that DID, the
// mistake surfacing as a confusing "the reply is from ..." — or, to an
// attacker's endpoint, a signed request handed out for nothing).
func TestMalformedDIDKeyToIsRefusedBeforeSending(t *testing.T) {
	var hits atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		hits.Add(1)
		w.WriteHeader(http.StatusTeapot)
	}))
	caller, _ := keygen(t, t.TempDir(), "caller.pem")
	for _, to := range []string{"did:key:zBAD", "did:key:z6MkhaXgBZDvotDkL5257faiztiGiC2QtKLGpbnnEGta2do", "did:key:", "did:key:abc"} {
		for _, args := range [][]string{
			{"query", url, "--key", caller, "--to", to, "--capability", translateCap},
			{"invoke", url, "--key", caller, "--to", to, "--encrypt", "--id", translateCap + ":2.0.0", "--params", params2},
		} {
			r := runCLI(t, "", args...)
			if r.code != 2 || !strings.Contains(r.stderr, "--to "+to+" is not a") || !strings.Contains(r.stderr, "key show --did") {
				t.Errorf("%s --to %q: exit %d, stderr %q", args[0], to, r.code, r.stderr)
			}
		}
	}
	if n := hits.Load(); n != 0 {
		t.Fatalf("%d requests reached the network", n)
	}
}
