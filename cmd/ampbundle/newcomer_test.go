package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/internal/cliutil/clitest"
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
// nothing on stderr, and exit 0 (threat: a newcomer's first "ampbundle
// --help" printing "flag: help requested" and exiting 2, so that a script
// or a package's smoke test calling it reports a failure).
func TestHelpFlagPrintsUsageAndExitsZero(t *testing.T) {
	calls := [][]string{{"--help"}, {"-h"}, {"help"}}
	for _, p := range clitest.CommandPaths(preparedApp()) {
		calls = append(calls,
			append(slices.Clone(p), "--help"),
			append(slices.Clone(p), "-h"),
			append([]string{"help"}, p...))
		if len(p) > 1 { // "ampbundle trust help add"
			calls = append(calls, append(append(slices.Clone(p[:len(p)-1]), "help"), p[len(p)-1]))
		}
	}
	if len(calls) < 3*25 {
		t.Fatalf("only %d calls: the command list is incomplete", len(calls))
	}
	for _, args := range calls {
		r := runCLI(t, nil, args...)
		if r.code != 0 || !strings.Contains(r.stdout, "USAGE:") || r.stderr != "" {
			t.Errorf("ampbundle %s: exit %d, stderr %q, stdout %.80q", strings.Join(args, " "), r.code, r.stderr, r.stdout)
		}
	}
}

// TestVersionCommandMatchesVersionFlag: "ampbundle version" prints what
// --version prints, with --json too (threat: a newcomer typing the command
// every other CLI has and getting "unknown command").
func TestVersionCommandMatchesVersionFlag(t *testing.T) {
	for _, extra := range [][]string{nil, {"--json"}} {
		flag := runCLI(t, nil, append([]string{"--version"}, extra...)...)
		cmd := runCLI(t, nil, append([]string{"version"}, extra...)...)
		if cmd.code != 0 || cmd.stdout != flag.stdout || !strings.Contains(cmd.stdout, "ampbundle") {
			t.Errorf("version %v: exit %d %q, --version printed %q", extra, cmd.code, cmd.stdout, flag.stdout)
		}
	}
	if r := runCLI(t, nil, "version", "extra"); r.code != 2 {
		t.Errorf("version with an argument: exit %d, want 2", r.code)
	}
}

// TestUnknownCommandSuggestsNearest: an unknown command is a usage error
// (exit 2) that names what was typed, escaped, and the nearest command
// when one is near (threat: "unknown command" alone, leaving a newcomer to
// guess which word was wrong; a typed name carrying terminal controls
// driving the terminal when echoed).
func TestUnknownCommandSuggestsNearest(t *testing.T) {
	tests := []struct {
		args          []string
		typed, advice string
	}{
		{[]string{"imprt", "x.ampb"}, `"imprt"`, "did you mean import?"},
		{[]string{"verfy"}, `"verfy"`, "did you mean verify?"},
		{[]string{"trust", "ad"}, `"ad"`, "did you mean add?"},
		{[]string{"help", "trsut"}, `"trsut"`, "did you mean trust?"},
		{[]string{"trust", "help", "ls2"}, `"ls2"`, "did you mean ls?"},
		{[]string{"frobnicate"}, `"frobnicate"`, ""},
		{[]string{"imp\x1b]0;owned\x07ort"}, `"imp\x1b]0;owned\x07ort"`, ""},
	}
	for _, tt := range tests {
		r := runCLI(t, nil, tt.args...)
		first, _, _ := strings.Cut(r.stderr, "\n")
		if r.code != 2 || !strings.Contains(first, "unknown command "+tt.typed) {
			t.Errorf("%q: exit %d, stderr %q", tt.args, r.code, r.stderr)
		}
		if tt.advice != "" && !strings.Contains(first, tt.advice) || tt.advice == "" && strings.Contains(first, "did you mean") {
			t.Errorf("%q: stderr %q, want advice %q", tt.args, r.stderr, tt.advice)
		}
		if strings.ContainsAny(r.stderr, "\x1b\x07") {
			t.Errorf("%q: raw control characters echoed: %q", tt.args, r.stderr)
		}
	}
	if r := runCLI(t, nil, "imprt", "--json"); r.code != 2 || errorCode(t, r) != "usage" || !strings.Contains(r.stdout, "did you mean import?") {
		t.Errorf("--json: exit %d %s", r.code, r.stdout)
	}
}

// TestCompletionOffersEveryCommandsFlags: the completion of "--" after any
// command offers each of that command's flags, and after a group its
// subcommands; bash, running the script "completion bash" prints, does the
// same (threat: "ampbundle import --<TAB>" offering nothing, as the
// scripts did, so that a newcomer cannot discover --db).
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
		for _, sc := range c.Subcommands {
			if got := cliutil.Complete(app, append(slices.Clone(p), "")); !slices.Contains(got, sc.Name) {
				t.Errorf("%s <TAB>: %q lacks %s", strings.Join(p, " "), got, sc.Name)
			}
		}
	}
	// A flag's value is a file name: the program offers nothing, and the
	// shell completes files.
	if got := cliutil.Complete(app, []string{"import", "--db", ""}); len(got) != 0 {
		t.Errorf("import --db <TAB>: %q", got)
	}

	if got := clitest.BashComplete(t, "ampbundle", "TestRunAsAmpbundle", "import", "--"); !slices.Contains(got, "--db") || !slices.Contains(got, "--allow-downgrade") || slices.Contains(got, "--to") {
		t.Errorf("bash: ampbundle import --<TAB>: %q", got)
	}
	if got := clitest.BashComplete(t, "ampbundle", "TestRunAsAmpbundle", "trust", "a"); !slices.Equal(got, []string{"add"}) {
		t.Errorf("bash: ampbundle trust a<TAB>: %q", got)
	}
	if got := clitest.BashComplete(t, "ampbundle", "TestRunAsAmpbundle", "imp"); !slices.Equal(got, []string{"import"}) {
		t.Errorf("bash: ampbundle imp<TAB>: %q", got)
	}
	for _, sh := range []string{"zsh", "fish"} {
		r := runCLI(t, nil, "completion", sh)
		if r.code != 0 || !strings.Contains(r.stdout, "__complete") || !strings.Contains(r.stdout, "_ampbundle") {
			t.Errorf("completion %s: exit %d, %q", sh, r.code, r.stdout)
		}
	}
}

// TestRunAsAmpbundle is the program when clitest.BashComplete runs it.
func TestRunAsAmpbundle(t *testing.T) {
	clitest.AsProgram("ampbundle", func(ctx context.Context, args []string) int {
		return run(ctx, cliutil.OS(), args)
	})
}

// TestManPageIsSectionOne: the man page is a section 1 page with the usual
// header, a fixed date (reproducible, never empty), and the sections a
// reader of a man page looks for: every visible command with its
// description, the exit status of docs/CLI.md §1.1, the signals, the files,
// and no "help" command among the commands (threat: "man ampbundle"
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
	clitest.CheckManPage(t, app, "ampbundle", cliutil.ManDate, string(files["man/ampbundle.1"]), string(doc), []string{"SIGTERM"}, nil)
}

// TestBuildOfABundleFileSaysItWantsASourceFolder: "build good.ampb" (a
// bundle file where the source folder belongs) says that build wants a
// source folder, before any key is read (threat: an error about an
// artifact key's path segments, which points nowhere near the mistake).
func TestBuildOfABundleFileSaysItWantsASourceFolder(t *testing.T) {
	out := filepath.Join(t.TempDir(), "x.ampb")
	// The key is a public key: the source is judged first.
	r := runCLI(t, nil, "build", sampleFile("translate"), "-o", out, "--key", samplePub("example-publisher"))
	if r.code != 1 || !strings.Contains(r.stderr, "translate.ampb is a file; build wants a source folder") || !strings.Contains(r.stderr, "hint:") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("a refused build left an output file")
	}
	r = runCLI(t, nil, "build", sampleFile("translate"), "-o", out, "--key", sampleKey(t, "example-publisher"), "--json")
	if r.code != 1 || errorCode(t, r) != "invalid_source" {
		t.Fatalf("--json: exit %d %s", r.code, r.stdout)
	}
}

// TestBuildWithAPublicKeySaysSoBeforeTheFileMode: "build SRC --key
// publisher.pub" (a public key file, mode 0644 as keygen writes it) says a
// public key was given where the private key is needed, never "run chmod
// 600" (threat: an operator making a public key file private, then being
// told it is the wrong file).
func TestBuildWithAPublicKeySaysSoBeforeTheFileMode(t *testing.T) {
	dir := t.TempDir()
	key, pub := filepath.Join(dir, "publisher.key"), filepath.Join(dir, "publisher.pub")
	mustRun(t, "keygen", "-o", key, "--pub", pub)
	out := filepath.Join(dir, "x.ampb")
	r := runCLI(t, nil, "build", filepath.Join(testdata, "translate"), "-o", out, "--key", pub)
	if r.code != 1 || !strings.Contains(r.stderr, "public key where a private key is needed") || strings.Contains(r.stderr, "chmod") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
}

// TestHelpOfAnUnknownCommandNamesItAndPointsAtTheProgramsHelp: "help
// nosuch" names what was typed (and the nearest command, when one is
// near) and sends the reader to the help that lists the commands, not to
// the help of the help command (threat: "run 'ampbundle help --help'", a
// dead end that lists no command).
func TestHelpOfAnUnknownCommandNamesItAndPointsAtTheProgramsHelp(t *testing.T) {
	tests := []struct {
		args       []string
		want, next string
	}{
		{[]string{"help", "nosuch"}, `unknown command "nosuch"`, "run 'ampbundle --help' for usage"},
		{[]string{"help", "imprt"}, `unknown command "imprt"; did you mean import?`, "run 'ampbundle --help' for usage"},
		{[]string{"help", "trust", "ad"}, `unknown command "ad"; did you mean add?`, "run 'ampbundle trust --help' for usage"},
	}
	for _, tt := range tests {
		r := runCLI(t, nil, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.want) || !strings.Contains(r.stderr, tt.next) || strings.Contains(r.stderr, "help --help") {
			t.Errorf("%q: exit %d, stderr %q", tt.args, r.code, r.stderr)
		}
	}
}

// TestJSONErrorOfAnUnknownCommandWhereverJSONIsGiven: --json before or
// after an unknown command gets the JSON error document on stdout (threat:
// a script parsing stdout getting plain text for one order of the words).
func TestJSONErrorOfAnUnknownCommandWhereverJSONIsGiven(t *testing.T) {
	for _, args := range [][]string{{"--json", "imprt"}, {"imprt", "--json"}, {"--json", "help", "imprt"}} {
		r := runCLI(t, nil, args...)
		if r.code != 2 || errorCode(t, r) != "usage" || !strings.Contains(r.stdout, "did you mean import?") {
			t.Errorf("%q: exit %d, stdout %q", args, r.code, r.stdout)
		}
	}
}

// TestVerifyWithAPrivateKeyAsTrustSaysSo: "verify --trust agent.key" (the
// private key where the publisher's public key belongs) says that a
// private key was given where a public key is needed, names --pub, and
// never shows the key (threat: `public key file is not one pem "PUBLIC
// KEY" block`, which leaves the operator to guess which file was wrong).
func TestVerifyWithAPrivateKeyAsTrustSaysSo(t *testing.T) {
	key := sampleKey(t, "example-publisher")
	pem, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	r := runCLI(t, nil, "verify", sampleFile("translate"), "--trust", key)
	if r.code != 1 || !strings.Contains(r.stderr, "private key where a public key is needed") || !strings.Contains(r.stderr, "--pub") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	body := strings.Split(strings.TrimSpace(string(pem)), "\n")[1]
	if strings.Contains(r.stderr, body[:16]) {
		t.Fatal("the error shows the private key")
	}
}

// TestSplitIntoOnePartSaysPart: a bundle that fits in one part is "split
// into 1 part", and joined from "1 part" (threat: "1 parts", the mark of a
// tool nobody read the output of).
func TestSplitIntoOnePartSaysPart(t *testing.T) {
	dir := t.TempDir()
	r := runCLI(t, nil, "split", sampleFile("translate"), "--size", "10M", "--key", sampleKey(t, "example-publisher"), "--out-dir", dir)
	if r.code != 0 || !strings.Contains(r.stdout, " into 1 part of at most ") {
		t.Fatalf("split: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
}

// TestCompletionOffersShellsAndSkipsGivenFlags: bash, running the
// script "completion bash" prints, offers bash, zsh and fish after
// "completion", and does not offer --db again once it is given, while a
// repeatable flag (--scope) is offered again (threat: TAB after
// "completion" offering file names, and --db offered twice, which the
// parser then refuses).
func TestCompletionOffersShellsAndSkipsGivenFlags(t *testing.T) {
	if got := clitest.BashComplete(t, "ampbundle", "TestRunAsAmpbundle", "completion", ""); !slices.Equal(got, []string{"bash", "fish", "zsh"}) && !slices.Equal(got, []string{"bash", "zsh", "fish"}) {
		t.Errorf("completion <TAB>: %q", got)
	}
	got := clitest.BashComplete(t, "ampbundle", "TestRunAsAmpbundle", "trust", "add", "--db", "s.db", "--scope", "org.x", "--")
	if slices.Contains(got, "--db") || !slices.Contains(got, "--scope") || !slices.Contains(got, "--name") {
		t.Errorf("trust add --db s.db --scope org.x --<TAB>: %q", got)
	}
}

// TestHelpAsAFileNameIsAFileName: "import help" takes help as the file to
// import (docs/SPEC-DECISIONS.md CLI-8): the usage error is about what is
// missing, and points at "import --help" (threat: a word read as a request
// for help in one place and as a file in another, so that a file named
// help cannot be imported).
func TestHelpAsAFileNameIsAFileName(t *testing.T) {
	r := runCLI(t, nil, "import", "help")
	if r.code != 2 || !strings.Contains(r.stderr, "missing required flag --db") || !strings.Contains(r.stderr, "run 'ampbundle import --help' for usage") {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	db := newStore(t)
	r = runCLI(t, nil, "import", "help", "--db", db)
	if r.code != 1 || !strings.Contains(r.stderr, "help") || strings.Contains(r.stdout, "USAGE:") {
		t.Fatalf("with --db: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}
