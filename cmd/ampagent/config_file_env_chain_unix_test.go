//go:build unix

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// attackerScript is what another user puts where the agent would run it.
const attackerScript = "#!/bin/sh\necho '{\"attacker\":true}'\n"

// TestHandlerProgramEnvRunsThroughAnotherUsersInterpreterIsRefused: for
// #!/usr/bin/env NAME, CLI-72 (amended) followed the #! chain of the
// first file of NAME in PATH only; a file of NAME in a later PATH folder
// was judged by its owner, mode and folders, its own #! line not read.
// execvp goes on to that later file when the first fails to run (its
// interpreter missing, a stale venv shim), and the kernel then runs the
// interpreter the later file's #! line names: one in a folder another
// user may write, or missing from a sticky one and planted after the
// load, ran that user's code as the agent's user. And an env reached
// through a link of another name (#!/opt/bin/e NAME, e a link to
// /usr/bin/env) was not taken for env: NAME was found in PATH unjudged,
// a PATH folder others may write included (threat: the one file env
// runs was one the agent never judged). Each refused row started and ran
// {"attacker":true} before; now it is refused (handler_program_missing,
// the part named; handler_failed at each call, nothing run), and the
// rows whose files only root or the agent's user may write still run
// (CLI-75, CLI-76).
func TestHandlerProgramEnvRunsThroughAnotherUsersInterpreterIsRefused(t *testing.T) {
	env := envProgramPath(t)
	for _, tc := range []struct {
		name string
		// setup returns the handler's command and PATH.
		setup func(t *testing.T, base string) (cmd []string, path string)
		why   string // in the refusal; empty: the program runs
		plant string // a file another user puts there after the load (under base)
	}{
		{"a later PATH file whose interpreter is in a folder others may write", func(t *testing.T, base string) ([]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			writeExec(t, filepath.Join(base, "open", "interp"), attackerScript, 0o755)
			return laterInPATH(t, base, filepath.Join(base, "open", "interp"))
		}, "open may be written by group or others", ""},
		{"a later PATH file whose interpreter is missing from a sticky folder, planted after the load", func(t *testing.T, base string) ([]string, string) {
			mkdir(t, filepath.Join(base, "sticky"), os.ModeSticky|0o777)
			return laterInPATH(t, base, filepath.Join(base, "sticky", "interp"))
		}, "may create it", "sticky/interp"},
		{"a later PATH file whose interpreter only its owner may write", func(t *testing.T, base string) ([]string, string) {
			return laterInPATH(t, base, writeExec(t, filepath.Join(base, "safe3", "interp"), interpreterScript, 0o755))
		}, "", ""},
		{"env through a link of another name, finding NAME in a folder others may write", func(t *testing.T, base string) ([]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			writeExec(t, filepath.Join(base, "open", "ampinterp"), attackerScript, 0o755)
			mkdir(t, filepath.Join(base, "bin"), 0o755)
			e := link(t, env, filepath.Join(base, "bin", "e"))
			return []string{script(t, base, "#!"+e+" ampinterp")}, filepath.Join(base, "open")
		}, "open may be written by group or others", ""},
		{"env through a link of another name, finding NAME in a safe folder", func(t *testing.T, base string) ([]string, string) {
			writeExec(t, filepath.Join(base, "safe", "ampinterp"), interpreterScript, 0o755)
			mkdir(t, filepath.Join(base, "bin"), 0o755)
			e := link(t, env, filepath.Join(base, "bin", "e"))
			return []string{script(t, base, "#!"+e+" ampinterp")}, filepath.Join(base, "safe")
		}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			cmd, path := tc.setup(t, base)
			judgeEnvHandler(t, base, cmd, path, tc.why, tc.plant, true)
		})
	}
}

// judgeEnvHandler loads a handler of command cmd and PATH path: it must
// be refused (handler_program_missing, naming why) or, with why empty,
// accepted; then, with run, loaded past the check, plant (a file
// another user puts under base after the load) written, its call must
// fail (handler_failed, nothing run) or answer the program's {"ran":true}.
func judgeEnvHandler(t *testing.T, base string, cmd []string, path, why, plant string, run bool) {
	t.Helper()
	cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": cmd, "env": map[string]string{"PATH": path}}}})
	_, err := serveConfigOf(t, "--config", cfgFile)
	switch {
	case why == "" && err != nil:
		t.Fatalf("a handler env runs only root's or the agent's user's files for is refused: %v", err)
	case why != "" && (amp.NameOf(err) != "handler_program_missing" || !strings.Contains(err.Error(), why)):
		t.Fatalf("serve starts with a handler env may run another user's file for: %v (want %q)", err, why)
	}
	cfg, err := serveConfigOf(t, "--config", cfgFile, "--allow-missing-handlers")
	if err != nil {
		t.Fatal(err)
	}
	if plant != "" {
		writeExec(t, filepath.Join(base, plant), attackerScript, 0o755)
	}
	if !run {
		return
	}
	out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
	switch {
	case why == "" && (err != nil || !strings.Contains(fmt.Sprint(out), "ran:true")):
		t.Fatalf("the program env runs did not run: %v %v", out, err)
	case why != "" && err == nil:
		t.Fatalf("another user's file ran as the agent's user: %v", out)
	case why != "" && amp.NameOf(err) != "handler_failed":
		t.Fatalf("the refused handler's call: %v, want handler_failed", err)
	}
}

// laterInPATH writes the handler's program, #!/usr/bin/env ampinterp,
// and two files of that name: the first in PATH (safe/ampinterp), whose
// interpreter is missing, so execvp goes on; the later one
// (safe2/ampinterp), both folders root's or the agent's user's of mode
// 0755, whose #! line names interp. It returns the command and PATH.
func laterInPATH(t *testing.T, base, interp string) ([]string, string) {
	t.Helper()
	writeExec(t, filepath.Join(base, "safe", "ampinterp"), "#!"+filepath.Join(base, "safe", "gone")+"\n", 0o755)
	writeExec(t, filepath.Join(base, "safe2", "ampinterp"), "#!"+interp+"\nexec /bin/sh \"$@\"\n", 0o755)
	return []string{script(t, base, "#!"+envProgramPath(t)+" ampinterp")}, filepath.Join(base, "safe") + ":" + filepath.Join(base, "safe2")
}

// TestHandlerProgramWhoseEnvFilesFanOutPastTheBoundIsRefused: following
// every file env may run (CLI-75) reads the #! line of each file of
// NAME in each PATH folder, and each of those may name env again, each
// looked up in every PATH folder: the files judged grow as PATH's
// folders to the power of the 4 lines, at each load (threat: a config
// or a PATH that has one load walk and read millions of files). At most
// 256 files and PATH places are judged for a handler; one past them is
// refused by name (handler_program_missing's reason), while a PATH just
// within it is accepted.
func TestHandlerProgramWhoseEnvFilesFanOutPastTheBoundIsRefused(t *testing.T) {
	for _, tc := range []struct {
		folders int // PATH's, every other one holding a file of NAME
		refuse  bool
	}{{maxJudgedFiles - 2, false}, {maxJudgedFiles - 1, true}, {1000, true}} {
		t.Run(strconv.Itoa(tc.folders), func(t *testing.T) {
			base := t.TempDir()
			var dirs []string
			for i := range tc.folders {
				d := filepath.Join(base, "p"+strconv.Itoa(i))
				mkdir(t, d, 0o755)
				if i%2 == 0 {
					writeExec(t, filepath.Join(d, "ampinterp"), "exec /bin/sh \"$@\"\n", 0o755)
				}
				dirs = append(dirs, d)
			}
			p := script(t, base, "#!"+envProgramPath(t)+" ampinterp")
			err := programWriters(hostMounts(), p, nil, strings.Join(dirs, ":"))
			switch {
			case !tc.refuse && err != nil:
				t.Fatalf("a PATH of %d folders (with the program and env, %d files) is refused: %v", tc.folders, tc.folders+2, err)
			case tc.refuse && (err == nil || !strings.Contains(err.Error(), "more than 256 files to judge")):
				t.Fatalf("a PATH of %d folders is judged past the bound: %v", tc.folders, err)
			}
		})
	}
}
