//go:build unix

package main

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// interpreterScript is an interpreter for the tests' scripts: itself a
// script, run by /bin/sh, that has /bin/sh run the script it is given.
const interpreterScript = "#!/bin/sh\nexec /bin/sh \"$@\"\n"

// writeExec writes an executable file of mode m with text at p (its
// folder made, of mode 0755, if missing) and returns p.
func writeExec(t *testing.T, p, text string, m os.FileMode) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(p, m); err != nil {
		t.Fatal(err)
	}
	return p
}

// script writes the handler's program, base/prog/prog, a script whose
// #! line is line, which prints {"ran":true}, and returns its path.
func script(t *testing.T, base, line string) string {
	t.Helper()
	return writeExec(t, filepath.Join(base, "prog", "prog"), line+"\necho '{\"ran\":true}'\n", 0o755)
}

// envProgramPath is the env named on the tests' #! lines.
func envProgramPath(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat("/usr/bin/env"); err != nil {
		t.Skip("no /usr/bin/env")
	}
	return "/usr/bin/env"
}

// TestHandlerProgramWhoseInterpreterAnotherUserMayWriteIsRefused: CLI-70
// judges the handler's program, the folders on its way and the links to
// it, but a script's #! line was never read: a script of the agent's
// user in folders only it may write, run by an interpreter another user
// may rewrite or replace, ran that user's code as the agent's user, as
// did env (#!/usr/bin/env NAME) finding NAME in a PATH folder another
// user may write, or finding it after one where they could plant it,
// or before one, when the file env found first fails to run (a missing
// or not executable interpreter: execvp goes on down PATH) (threat: the interpreter, the one file that decides what a script
// does, was the one file not judged). Each such handler ran before;
// now it does not (handler_program_missing at the start, a reason and a
// hint; handler_failed at each call otherwise), while a script whose
// interpreters only root or the agent's user may write still runs. A #!
// line the agent cannot follow to the file the system runs (longer than
// 127 bytes, a relative interpreter, env options, a relative PATH
// folder, an empty PATH, a loop of #! lines) is refused too: fail closed
// (CLI-72, amended).
func TestHandlerProgramWhoseInterpreterAnotherUserMayWriteIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name string
		// setup returns the handler's command, its "env" and its "dir".
		setup func(t *testing.T, base string) (cmd []string, env map[string]string, dir string)
		why   string // in the refusal; empty: the program runs
		plant string // a program another user puts there after the load (under base); empty: none
	}{
		{"a script whose interpreter only its owner may write", func(t *testing.T, base string) ([]string, map[string]string, string) {
			in := writeExec(t, filepath.Join(base, "safe", "interp"), interpreterScript, 0o755)
			return []string{script(t, base, "#!"+in)}, nil, ""
		}, "", ""},
		{"a script whose interpreter others may write", func(t *testing.T, base string) ([]string, map[string]string, string) {
			in := writeExec(t, filepath.Join(base, "safe", "interp"), interpreterScript, 0o757)
			return []string{script(t, base, "#!"+in)}, nil, ""
		}, "may be written by group or others", ""},
		{"a script whose interpreter is in a folder group may write", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o775)
			in := writeExec(t, filepath.Join(base, "open", "interp"), interpreterScript, 0o755)
			return []string{script(t, base, "#! "+in+" ")}, nil, ""
		}, "may be written by group or others", ""},
		{"a script whose interpreter is a link in a folder others may write", func(t *testing.T, base string) ([]string, map[string]string, string) {
			in := writeExec(t, filepath.Join(base, "safe", "interp"), interpreterScript, 0o755)
			mkdir(t, filepath.Join(base, "open"), 0o777)
			return []string{script(t, base, "#!"+link(t, in, filepath.Join(base, "open", "interp")))}, nil, ""
		}, "may be written by group or others", ""},
		{"a script whose interpreter's own interpreter others may write", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			in2 := writeExec(t, filepath.Join(base, "open", "interp"), interpreterScript, 0o755)
			in1 := writeExec(t, filepath.Join(base, "safe", "interp"), "#!"+in2+"\nexec /bin/sh \"$@\"\n", 0o755)
			return []string{script(t, base, "#!"+in1)}, nil, ""
		}, "may be written by group or others", ""},
		{"a script whose interpreter is missing from a sticky folder, planted after the load", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "sticky"), os.ModeSticky|0o777)
			return []string{script(t, base, "#!"+filepath.Join(base, "sticky", "interp"))}, nil, ""
		}, "may create it", "sticky/interp"},
		{"a script env runs from a safe PATH folder", func(t *testing.T, base string) ([]string, map[string]string, string) {
			writeExec(t, filepath.Join(base, "safe", "ampinterp"), interpreterScript, 0o755)
			return []string{script(t, base, "#!"+envProgramPath(t)+" ampinterp")}, map[string]string{"PATH": filepath.Join(base, "safe")}, ""
		}, "", ""},
		{"a script env runs from the agent's PATH, a folder others may write", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			writeExec(t, filepath.Join(base, "open", "ampinterp"), interpreterScript, 0o755)
			t.Setenv("PATH", filepath.Join(base, "open"))
			return []string{script(t, base, "#!"+envProgramPath(t)+" ampinterp")}, nil, ""
		}, "may be written by group or others", ""},
		{"a script env runs from the handler's PATH, after a folder where others may plant it", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			writeExec(t, filepath.Join(base, "safe", "ampinterp"), interpreterScript, 0o755)
			return []string{script(t, base, "#!"+envProgramPath(t)+" ampinterp")},
				map[string]string{"PATH": filepath.Join(base, "open") + ":" + filepath.Join(base, "safe")}, ""
		}, "open may be written by group or others", ""},
		{"a script env runs from the handler's PATH, whose interpreter is missing, before a folder where others may plant it", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			writeExec(t, filepath.Join(base, "safe", "ampinterp"), "#!"+filepath.Join(base, "safe", "gone")+"\n", 0o755)
			return []string{script(t, base, "#!"+envProgramPath(t)+" ampinterp")},
				map[string]string{"PATH": filepath.Join(base, "safe") + ":" + filepath.Join(base, "open")}, ""
		}, "open may be written by group or others", "open/ampinterp"},
		{"a script env runs from the handler's PATH, whose interpreter is not executable, before a folder where others may plant it", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			sh := writeExec(t, filepath.Join(base, "safe", "sh0644"), interpreterScript, 0o644)
			writeExec(t, filepath.Join(base, "safe", "ampinterp"), "#!"+sh+"\n", 0o755)
			return []string{script(t, base, "#!"+envProgramPath(t)+" ampinterp")},
				map[string]string{"PATH": filepath.Join(base, "safe") + ":" + filepath.Join(base, "open")}, ""
		}, "open may be written by group or others", "open/ampinterp"},
		{"a script env runs with the agent's PATH unset", func(t *testing.T, base string) ([]string, map[string]string, string) {
			writeExec(t, filepath.Join(base, "prog", "ampinterp"), interpreterScript, 0o755)
			t.Setenv("PATH", "")
			os.Unsetenv("PATH")
			return []string{script(t, base, "#!"+envProgramPath(t)+" ampinterp")}, nil, filepath.Join(base, "prog")
		}, "PATH, which is empty", ""},
		{"a script env runs with options", func(t *testing.T, base string) ([]string, map[string]string, string) {
			writeExec(t, filepath.Join(base, "safe", "ampinterp"), interpreterScript, 0o755)
			return []string{script(t, base, "#!"+envProgramPath(t)+" -S ampinterp")}, map[string]string{"PATH": filepath.Join(base, "safe")}, ""
		}, "gives env options", ""},
		{"a script env finds through a relative PATH folder others may write", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			writeExec(t, filepath.Join(base, "open", "ampinterp"), interpreterScript, 0o755)
			return []string{script(t, base, "#!"+envProgramPath(t)+" ampinterp")}, map[string]string{"PATH": "open"}, base
		}, "not absolute", ""},
		{"a script whose relative interpreter is in a working directory others may write", func(t *testing.T, base string) ([]string, map[string]string, string) {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			writeExec(t, filepath.Join(base, "open", "interp"), interpreterScript, 0o755)
			return []string{script(t, base, "#!interp")}, nil, filepath.Join(base, "open")
		}, "relative path", ""},
		{"a script whose #! line is longer than 127 bytes", func(t *testing.T, base string) ([]string, map[string]string, string) {
			long := filepath.Join(base, "safe", strings.Repeat("d", max(1, 140-len(base))), "interp")
			in := writeExec(t, long, interpreterScript, 0o755)
			return []string{script(t, base, "#!"+in)}, nil, ""
		}, "longer than 127 bytes", ""},
		{"a script that names itself as its interpreter", func(t *testing.T, base string) ([]string, map[string]string, string) {
			p := filepath.Join(base, "prog", "prog")
			return []string{script(t, base, "#!"+p)}, nil, ""
		}, "more than 4 #! lines", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			cmd, env, dir := tc.setup(t, base)
			h := map[string]any{"command": cmd, "env": env}
			if dir != "" {
				h["dir"] = dir
			}
			cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": h}})
			_, err := serveConfigOf(t, "--config", cfgFile)
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("a script whose interpreters only the agent's user may write is refused: %v", err)
			case tc.why != "" && (amp.NameOf(err) != "handler_program_missing" || !strings.Contains(err.Error(), tc.why)):
				t.Fatalf("serve starts with a script whose interpreter is not judged: %v (want %q)", err, tc.why)
			}
			cfg, err := serveConfigOf(t, "--config", cfgFile, "--allow-missing-handlers")
			if err != nil {
				t.Fatal(err)
			}
			if tc.plant != "" {
				writeExec(t, filepath.Join(base, tc.plant), "#!/bin/sh\necho '{\"planted\":true}'\n", 0o755)
			}
			out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
			switch {
			case tc.why == "" && err != nil:
				t.Fatalf("the script did not run: %v", err)
			case tc.why != "" && err == nil:
				t.Fatalf("the script ran through an interpreter the agent did not judge: %v", out)
			case tc.why != "" && amp.NameOf(err) != "handler_failed":
				t.Fatalf("the refused script's call: %v, want handler_failed", err)
			}
		})
	}
}

// TestHandlerProgramTheAgentMayOnlyExecuteIsRefusedSayingWhy: a program
// the agent's user may execute but not read (root's of mode 0711, its
// own of mode 0111) runs all the same, and the kernel reads its #! line and runs the interpreter
// named there, so CLI-72 refuses it; the refusal said only "cannot be
// read" and "make the program readable", which an operator who made it
// execute-only on purpose took for a fault of the agent's (threat: a
// refusal that does not say what it guards against is worked around).
// Now it says why (handler_program_missing, CLI-72 amended). Root reads
// any file, and CI runs as root, where this test was skipped: as root
// it runs its check again in a copy of the test binary as uid 65534, on
// root's program of mode 0711, and fails if that child cannot run or
// does not pass (CLI-79).
func TestHandlerProgramTheAgentMayOnlyExecuteIsRefusedSayingWhy(t *testing.T) {
	if dir := os.Getenv(execOnlyChildEnv); dir != "" {
		execOnlyRefusedSayingWhy(t, filepath.Join(dir, "prog", "prog"))
		return
	}
	base := t.TempDir()
	in := writeExec(t, filepath.Join(base, "safe", "interp"), interpreterScript, 0o755)
	if os.Geteuid() != 0 {
		execOnlyRefusedSayingWhy(t, writeExec(t, filepath.Join(base, "prog", "prog"), "#!"+in+"\necho '{\"ran\":true}'\n", 0o111))
		return
	}
	writeExec(t, filepath.Join(base, "prog", "prog"), "#!"+in+"\necho '{\"ran\":true}'\n", 0o711)
	// The child (uid 65534) walks base's folders and runs the copy.
	for _, d := range []string{filepath.Dir(base), base} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(base, "ampagent.test")
	if err := os.WriteFile(bin, data, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^TestHandlerProgramTheAgentMayOnlyExecuteIsRefusedSayingWhy$", "-test.count=1", "-test.v")
	cmd.Dir = base
	cmd.Env = append(os.Environ(), execOnlyChildEnv+"="+base)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestHandlerProgramTheAgentMayOnlyExecuteIsRefusedSayingWhy") {
		t.Fatalf("the check as uid 65534 of root's execute-only program did not pass: %v\n%s", err, out)
	}
}

// execOnlyChildEnv names, for the test binary run again as uid 65534,
// the folder holding root's execute-only program.
const execOnlyChildEnv = "AMPAGENT_TEST_EXEC_ONLY_DIR"

// execOnlyRefusedSayingWhy checks, as a user who may execute p but not
// read it, that serve refuses p saying why.
func execOnlyRefusedSayingWhy(t *testing.T, p string) {
	t.Helper()
	if os.Geteuid() == 0 {
		t.Fatal("the check of an execute-only program runs as root, who reads any file")
	}
	if _, err := os.ReadFile(p); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("the program is not execute-only for uid %d: %v", os.Geteuid(), err)
	}
	cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": []string{p}}}})
	_, err := serveConfigOf(t, "--config", cfgFile)
	if amp.NameOf(err) != "handler_program_missing" || !strings.Contains(err.Error(), "the kernel reads the #! line of a file it may only execute") {
		t.Fatalf("an execute-only program's refusal does not say why: %v", err)
	}
}
