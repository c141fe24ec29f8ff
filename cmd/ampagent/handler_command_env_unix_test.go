//go:build unix

package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// ranScript is a program that says it ran, as the handler's answer.
const ranScript = "#!/bin/sh\necho '{\"ran\":true}'\n"

// TestHandlerCommandThatIsEnvRunningAnotherUsersProgramIsRefused: a
// handler whose command is env itself ("command": ["/usr/bin/env",
// "python3", "t.py"], or env through a link of another name) has env
// find python3 in the program's PATH at each call, as
// #!/usr/bin/env python3 does; CLI-72, CLI-75 and CLI-76 judged the
// PATH folders and the files found there for the #! line only, and for
// the command judged env alone: another user's python3 in a PATH folder
// others may write, or planted after the load in one tried before the
// right one, ran as the agent's user (threat: the one file env runs
// was one the agent never judged). Each refused row below started and
// ran before (the planted or the other user's file answering
// {"attacker":true}), or started with an env invocation the check does
// not read (options it does not follow, PATH left unset); now each is
// refused (handler_program_missing, the part or the word named;
// handler_failed at each call, nothing run), and the rows whose files
// only root or the agent's user may write still run, their other
// arguments unjudged (CLI-74) (CLI-80).
func TestHandlerCommandThatIsEnvRunningAnotherUsersProgramIsRefused(t *testing.T) {
	env := envProgramPath(t)
	for _, tc := range []struct {
		name string
		// setup returns the handler's command and its "env" PATH.
		setup func(t *testing.T, base string) (cmd []string, path string)
		why   string // in the refusal; empty: the program runs
		plant string // a file another user puts there after the load (under base)
	}{
		{"env finding another user's python3 in a PATH folder others may write", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "python3", "t.py"}, openPython(t, base)
		}, "open may be written by group or others", ""},
		{"env finding python3 in a safe folder after one where others may plant it", func(t *testing.T, base string) ([]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			return []string{env, "python3"}, filepath.Join(base, "open") + ":" + safePython(t, base)
		}, "open may be written by group or others", "open/python3"},
		{"a link named other than env to env, finding python3 in a folder others may write", func(t *testing.T, base string) ([]string, string) {
			mkdir(t, filepath.Join(base, "bin"), 0o755)
			return []string{link(t, env, filepath.Join(base, "bin", "e")), "python3"}, openPython(t, base)
		}, "open may be written by group or others", ""},
		{"env found in PATH by its name, finding python3 in a folder others may write", func(t *testing.T, base string) ([]string, string) {
			t.Setenv("PATH", filepath.Dir(env))
			return []string{"env", "python3"}, openPython(t, base)
		}, "open may be written by group or others", ""},
		{"env given a PATH assignment naming a folder others may write", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "PATH=" + openPython(t, base), "python3"}, safePython(t, base)
		}, "open may be written by group or others", ""},
		{"env finding python3 whose interpreter is in a folder others may write", func(t *testing.T, base string) ([]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			in := writeExec(t, filepath.Join(base, "open", "interp"), attackerScript, 0o755)
			writeExec(t, filepath.Join(base, "safe", "python3"), "#!"+in+"\n", 0o755)
			return []string{env, "python3"}, filepath.Join(base, "safe")
		}, "open may be written by group or others", ""},
		{"env given python3 by an absolute path in a folder others may write", func(t *testing.T, base string) ([]string, string) {
			return []string{env, filepath.Join(openPython(t, base), "python3")}, safePython(t, base)
		}, "open may be written by group or others", ""},
		{"env given python3 by a relative path", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "safe/python3"}, safePython(t, base)
		}, "relative path", ""},
		{"env -i, which leaves PATH to the C library", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "-i", "python3"}, safePython(t, base)
		}, "PATH unset", ""},
		{"env -u PATH, which leaves PATH to the C library", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "-u", "PATH", "python3"}, safePython(t, base)
		}, "PATH unset", ""},
		{"env -- -, which is -i, given a PATH assignment naming a folder others may write", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "--", "-", "PATH=" + openPython(t, base), "python3"}, safePython(t, base)
		}, "open may be written by group or others", ""},
		{"env -- -, which is -i and leaves PATH to the C library", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "--", "-", "python3"}, safePython(t, base)
		}, "PATH unset", ""},
		{"env -S, whose splitting the check does not read", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "-S", "python3 t.py"}, safePython(t, base)
		}, `env option "-S"`, ""},
		{"env -C, which changes the folder env looks from", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "-C", base, "python3"}, safePython(t, base)
		}, `env option "-C"`, ""},
		{"env given an assignment of no name", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "=x", "python3"}, safePython(t, base)
		}, `assignment "=x"`, ""},
		{"env given an empty PATH by an assignment", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "PATH=", "python3"}, safePython(t, base)
		}, "PATH, which is empty", ""},
		{"env finding python3 in a safe folder, its arguments unjudged", func(t *testing.T, base string) ([]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			return []string{env, "python3", filepath.Join(base, "open", "t.py")}, safePython(t, base)
		}, "", ""},
		{"a link named other than env to env, finding python3 in a safe folder", func(t *testing.T, base string) ([]string, string) {
			mkdir(t, filepath.Join(base, "bin"), 0o755)
			return []string{link(t, env, filepath.Join(base, "bin", "e")), "python3"}, safePython(t, base)
		}, "", ""},
		{"env -i with PATH given, -u of another variable, -- and assignments", func(t *testing.T, base string) ([]string, string) {
			safe := safePython(t, base)
			return []string{env, "-u", "HOME", "-i", "--", "A=1", "PATH=" + safe, "python3"}, "/nonexistent"
		}, "", ""},
		{"env running no program", func(t *testing.T, base string) ([]string, string) {
			return []string{env, "-u", "HOME", "A=1"}, safePython(t, base)
		}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			cmd, path := tc.setup(t, base)
			// env with no program prints its environment: nothing to run.
			run := len(cmd) >= 2 && !strings.Contains(cmd[len(cmd)-1], "=")
			judgeEnvHandler(t, base, cmd, path, tc.why, tc.plant, run)
		})
	}
}

// openPython writes another user's python3 in base/open, a folder of
// mode 0777, and returns the folder.
func openPython(t *testing.T, base string) string {
	t.Helper()
	open := filepath.Join(base, "open")
	mkdir(t, open, 0o777)
	p := writeExec(t, filepath.Join(open, "python3"), attackerScript, 0o755)
	if os.Geteuid() == 0 {
		chown(t, p)
	}
	return open
}

// safePython writes python3, which says it ran, in base/safe, a folder
// of mode 0755, and returns the folder.
func safePython(t *testing.T, base string) string {
	t.Helper()
	writeExec(t, filepath.Join(base, "safe", "python3"), ranScript, 0o755)
	return filepath.Join(base, "safe")
}

// TestHandlerScriptWhosePathEnvTakesForAnAssignmentIsRefused: a script
// whose #! line is "#!/usr/bin/env" alone has the kernel run env with the
// script's path as its first word, and env runs it; but a path holding
// '=' (base/a=b/prog) is an assignment to env, which then runs the next
// word, the handler's first argument ("python3"), found in PATH, which
// nothing judged (CLI-74 leaves arguments unjudged): another user's
// python3 in a PATH folder others may write ran as the agent's user
// (threat: an argument run as the program). It ran {"attacker":true}
// before; now it is refused (handler_program_missing; handler_failed at
// each call), while a script at such a path whose #! line names its
// interpreter still runs (CLI-82).
func TestHandlerScriptWhosePathEnvTakesForAnAssignmentIsRefused(t *testing.T) {
	env := envProgramPath(t)
	for _, tc := range []struct {
		line string // the script's #! line
		why  string // in the refusal; empty: the program runs
	}{
		{"#!" + env, "which env takes for a variable"},
		{"#!/bin/sh", ""},
	} {
		t.Run(tc.line, func(t *testing.T) {
			base := t.TempDir()
			mkdir(t, filepath.Join(base, "a=b"), 0o755)
			prog := writeExec(t, filepath.Join(base, "a=b", "prog"), tc.line+"\necho '{\"ran\":true}'\n", 0o755)
			cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": []string{prog, "python3"}, "env": map[string]string{"PATH": openPython(t, base)}}}})
			_, err := serveConfigOf(t, "--config", cfgFile)
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("a script at a path holding '=' whose interpreter is named is refused: %v", err)
			case tc.why != "" && (amp.NameOf(err) != "handler_program_missing" || !strings.Contains(err.Error(), tc.why)):
				t.Fatalf("serve starts with env taking the script's path for a variable: %v (want %q)", err, tc.why)
			}
			cfg, err := serveConfigOf(t, "--config", cfgFile, "--allow-missing-handlers")
			if err != nil {
				t.Fatal(err)
			}
			out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
			switch {
			case tc.why == "" && (err != nil || !strings.Contains(fmt.Sprint(out), "ran:true")):
				t.Fatalf("the script did not run: %v %v", out, err)
			case tc.why != "" && err == nil:
				t.Fatalf("env ran the handler's argument as its program: %v", out)
			case tc.why != "" && amp.NameOf(err) != "handler_failed":
				t.Fatalf("the refused handler's call: %v, want handler_failed", err)
			}
		})
	}
}
