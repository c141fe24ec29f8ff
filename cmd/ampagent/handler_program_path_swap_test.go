//go:build unix

package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// writeProgram writes an executable shell script at path that prints
// out.
func writeProgram(t *testing.T, path, out string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho '"+out+"'\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestHandlerFoundThroughRelativePathReportedReady: a handler named by a
// bare name found in PATH only through a relative directory ("bin", ".")
// (threat: exec.LookPath answers exec.ErrDot, which programPath accepted:
// /readyz and the start's check said the program was there, while os/exec
// refused to run it at every call, each invocation failing 5001). The
// program is missing, as os/exec refuses it (CLI-38).
func TestHandlerFoundThroughRelativePathReportedReady(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	if err := os.Mkdir("bin", 0o755); err != nil {
		t.Fatal(err)
	}
	writeProgram(t, filepath.Join("bin", "prog"), `{"text":"x"}`)
	t.Setenv("PATH", "bin")
	h := execHandler{Command: []string{"prog"}}
	if err := checkProgram(h); err == nil {
		_, runErr := runProgram("org.example.p:1.0.0", h, slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
		t.Fatalf("readiness finds the program found only through a relative PATH entry ready; its run: %v", runErr)
	}
}

// TestHandlerPathSwappedAfterLoad: a handler named by a bare name is found
// in a PATH directory, and an earlier PATH directory is writable by
// someone else, who plants a program of the same name there once the
// agent runs (threat: exec.Command looked the name up in PATH at every
// call, so the next invocation ran the planted program, with the caller's
// params). The name is resolved once, when the config is loaded (at a
// start and at each reload), to an absolute path, and that path is what
// runs (CLI-38).
func TestHandlerPathSwappedAfterLoad(t *testing.T) {
	early, late := t.TempDir(), t.TempDir()
	writeProgram(t, filepath.Join(late, "prog"), `{"who":"installed"}`)
	t.Setenv("PATH", early+string(os.PathListSeparator)+late)
	cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": []string{"prog"}}}})
	cfg, err := serveConfigOf(t, "--config", cfgFile, "--allow-missing-handlers")
	if err != nil {
		t.Fatal(err)
	}
	writeProgram(t, filepath.Join(early, "prog"), `{"who":"planted"}`)
	out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
	if err != nil {
		t.Fatal(err)
	}
	if got := out.(map[string]any)["who"]; got != "installed" {
		t.Fatalf("the handler ran the %v program, not the one in PATH when the config was loaded", got)
	}
}

// TestHandlerWorkingDirMissingReportedNotReady: a handler's "dir" is
// missing, or a file (threat: only the program was checked, so the
// start and /readyz said ready while every invocation failed 5001, the
// program unable to change into its directory; the shape of CLI-38's
// ErrDot). The directory is checked with the program: missing is
// handler_program_missing, at the start and in /readyz; a relative one is
// under the agent's working directory, where a relative program path is
// found too, so the program's relative arguments mean the same place
// (CLI-42).
func TestHandlerWorkingDirMissingReportedNotReady(t *testing.T) {
	base := t.TempDir()
	t.Chdir(base)
	if err := os.Mkdir("work", 0o755); err != nil {
		t.Fatal(err)
	}
	writeProgram(t, filepath.Join("work", "prog"), `{"who":"work"}`)
	if err := os.WriteFile("file", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, dir, prog string
		ready           bool
	}{
		{"missing", filepath.Join(base, "gone"), "/bin/sh", false},
		{"a file", filepath.Join(base, "file"), "/bin/sh", false},
		{"relative, under the agent's working directory", "work", "./prog", true},
		{"absolute", filepath.Join(base, "work"), "./prog", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": []string{tc.prog}, "dir": tc.dir}}})
			cfg, err := serveConfigOf(t, "--config", cfgFile, "--allow-missing-handlers")
			if err != nil {
				t.Fatal(err)
			}
			ps := handlerProblems(cfg.Handlers)
			if (len(ps) == 0) != tc.ready {
				t.Fatalf("readiness problems %+v, want ready %v", ps, tc.ready)
			}
			if !tc.ready {
				if ps[0].Code != "handler_program_missing" {
					t.Fatalf("problem %+v, want handler_program_missing", ps[0])
				}
				return
			}
			out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
			if err != nil || out.(map[string]any)["who"] != "work" {
				t.Fatalf("the program in its working directory answered %v, %v", out, err)
			}
		})
	}
}
