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
