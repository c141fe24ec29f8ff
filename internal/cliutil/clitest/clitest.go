// Package clitest holds what the tests of both programs share to drive
// them as a newcomer does: the list of every command, and a real bash
// running a program's completion script.
package clitest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// asProgram is the environment variable that makes a test binary run as
// the program (see AsProgram).
const asProgram = "CLITEST_AS_PROGRAM"

// CommandPaths returns the path of every visible command of app at every
// depth ("import", "trust", "trust add"), in order. app must have been
// through cliutil.Prepare.
func CommandPaths(app *cli.App) [][]string {
	var out [][]string
	var walk func(prefix []string, cs []*cli.Command)
	walk = func(prefix []string, cs []*cli.Command) {
		for _, c := range cs {
			if c.Hidden {
				continue
			}
			p := append(append([]string{}, prefix...), c.Name)
			out = append(out, p)
			walk(p, c.Subcommands)
		}
	}
	walk(nil, app.Commands)
	return out
}

// AsProgram, called first in the test named by BashComplete's helper
// argument, runs the test binary as the program when BashComplete started
// it: run gets the program's arguments (name first) and its exit code ends
// the process. Otherwise it returns at once.
func AsProgram(name string, run func(ctx context.Context, args []string) int) {
	if os.Getenv(asProgram) != "1" {
		return
	}
	args := os.Args
	for i, a := range args {
		if a == "--" {
			args = args[i+1:]
			break
		}
	}
	os.Exit(run(context.Background(), append([]string{name}, args...)))
}

// BashComplete runs bash: it sources the script that "NAME completion bash"
// prints and calls its completion function as bash does when TAB is
// pressed after words (the last one the word being typed), and returns
// COMPREPLY. The program is this test binary running helper (a test that
// calls AsProgram), under the name NAME on PATH. The test is skipped where
// there is no bash.
func BashComplete(t *testing.T, name, helper string, words ...string) []string {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	wrapper := "#!/bin/sh\nexec '" + self + "' -test.run='^" + helper + "$' -- \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(wrapper), 0o755); err != nil {
		t.Fatal(err)
	}
	fn := "_" + strings.NewReplacer("-", "_", ".", "_").Replace(name) + "_complete"
	script := `source <(` + name + ` completion bash) || exit 3
COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
` + fn + `
printf '%s\n' "${COMPREPLY[@]}"`
	cmd := exec.Command(bash, append([]string{"--norc", "--noprofile", "-c", script, "bash", name}, words...)...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), asProgram+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("bash completion of %q: %v\n%s", words, err, out)
	}
	var reply []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			reply = append(reply, l)
		}
	}
	return reply
}

// CheckManPage checks the section-1 man page man of prog (what
// cliutil.DocFiles generates for app): the header with manDate, every
// section a man page carries, the signals named, no help command, a
// section with its description for every command, and every exit code of
// the first table of cliDoc's "### 1.1 Exit codes" (docs/CLI.md) in EXIT
// STATUS, except those skip names.
func CheckManPage(t testing.TB, app *cli.App, prog, manDate, man, cliDoc string, signals []string, skip func(code string) bool) {
	t.Helper()
	if want := ".TH " + strings.ToUpper(prog) + " 1 \"" + manDate + "\" \"" + prog + "\" \"User Commands\"\n"; !strings.HasPrefix(man, want) || manDate == "" {
		t.Fatalf("man page header: %.120q, want %q", man, want)
	}
	for _, sec := range []string{"NAME", "SYNOPSIS", "DESCRIPTION", "COMMANDS", "EXIT STATUS", "SIGNALS", "FILES", "SEE ALSO"} {
		if !strings.Contains(man, "\n.SH "+sec+"\n") {
			t.Errorf("no %s section", sec)
		}
	}
	_, sigs, _ := strings.Cut(man, ".SH SIGNALS\n")
	for _, sig := range signals {
		if !strings.Contains(sigs, sig) {
			t.Errorf("SIGNALS does not name %s", sig)
		}
	}
	if strings.Contains(man, ".SH help") || strings.Contains(man, ".SS "+prog+" help") {
		t.Error("the man page lists the help command")
	}
	for _, p := range CommandPaths(app) {
		if p[0] == "help" {
			continue
		}
		c := app.Command(p[0])
		for _, n := range p[1:] {
			c = c.Command(n)
		}
		head := ".SS " + prog + " " + strings.ReplaceAll(strings.Join(p, " "), "-", `\-`) + "\n"
		_, after, ok := strings.Cut(man, head)
		if !ok || c.Usage == "" || !strings.HasPrefix(strings.TrimPrefix(after, "(also: h)\n.br\n"), strings.ReplaceAll(c.Usage, "-", `\-`)[:min(20, len(c.Usage))]) {
			t.Errorf("%s: no section with its description", strings.Join(p, " "))
		}
	}
	_, table, _ := strings.Cut(cliDoc, "### 1.1 Exit codes")
	if i := strings.Index(table, "\n|"); i >= 0 {
		table = table[i+1:] // the table starts at its first row
	}
	table, _, _ = strings.Cut(table, "\n\n")
	_, exit, _ := strings.Cut(man, ".SH EXIT STATUS\n")
	exit, _, _ = strings.Cut(exit, "\n.SH ")
	codes := 0
	for _, row := range strings.Split(table, "\n") {
		cells := strings.Split(row, "|")
		if len(cells) < 3 || strings.TrimSpace(cells[1]) == "code" || strings.HasPrefix(strings.TrimSpace(cells[1]), "-") || strings.TrimSpace(cells[1]) == "" {
			continue
		}
		codes++
		code := strings.TrimSpace(cells[1])
		if skip != nil && skip(code) {
			continue
		}
		if !strings.Contains(exit, "\\fB"+code+"\\fR") {
			t.Errorf("EXIT STATUS lacks %q of docs/CLI.md §1.1", code)
		}
	}
	if codes == 0 {
		t.Error("docs/CLI.md has no exit-code table under \"### 1.1 Exit codes\"")
	}
}
