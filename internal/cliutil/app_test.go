package cliutil

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/amp"
)

func testApp() *cli.App {
	return &cli.App{Name: "x", Commands: []*cli.Command{
		{Name: "build", ArgsUsage: "SRC", Flags: []cli.Flag{
			&cli.StringFlag{Name: "out", Usage: "bundle `FILE` to write (required)"},
			&cli.StringFlag{Name: "key", Usage: "private key `PEM` file (required; mode 0600)"},
			&cli.StringFlag{Name: "to-doc", Usage: "document `FILE`; required unless --to is a did:key"},
			&cli.Int64Flag{Name: "max-body", Usage: "largest message in `BYTES` (default 16 MiB)"},
			&cli.BoolFlag{Name: "json", Usage: "json"},
		}, Action: func(*cli.Context) error { return nil }},
		{Name: "fail", Action: func(*cli.Context) error {
			inner := Failf("io_error", "cannot read the config file").WithCause(errors.New("open c.json: no such file or directory"))
			return Failf("invalid_config", "%s", amp.SafeMessage(inner)).WithCause(inner)
		}},
	}}
}

func runApp(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	env := &Env{Stdout: &out, Stderr: &errb}
	code := Run(context.Background(), testApp(), env, append([]string{"x"}, args...))
	return code, out.String(), errb.String()
}

// TestHelpShowsRequiredFlagsAndRealDefaults: the USAGE line names the
// required flags, and a flag whose zero value means "the default" shows
// that default, not "(default: 0)" (threat: an operator giving 0, which is
// refused, because help said it was the default).
func TestHelpShowsRequiredFlagsAndRealDefaults(t *testing.T) {
	for _, args := range [][]string{{"build", "--help"}, {"help", "build"}} {
		code, out, _ := runApp(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d", args, code)
		}
		if !strings.Contains(out, "x build --out FILE --key PEM [options] SRC") {
			t.Errorf("%v: usage line without the required flags:\n%s", args, out)
		}
		if strings.Contains(out, "--to-doc FILE [options]") || strings.Contains(out, "(default: 0)") || strings.Contains(out, "(default: false)") {
			t.Errorf("%v: dishonest help:\n%s", args, out)
		}
		if !strings.Contains(out, "largest message in BYTES (default: 16 MiB)") {
			t.Errorf("%v: default not shown:\n%s", args, out)
		}
	}
	if code, out, _ := runApp(t, "help"); code != 0 || !strings.Contains(out, "build") {
		t.Fatalf("help: %d %q", code, out)
	}
	if code, _, _ := runApp(t, "help", "nope"); code != 2 {
		t.Fatalf("help of an unknown command: exit %d", code)
	}
}

// TestHumanErrorSaysItOnce: a wrapped error is printed once, without the
// internal error names of its causes.
func TestHumanErrorSaysItOnce(t *testing.T) {
	code, _, stderr := runApp(t, "fail")
	want := "x: cannot read the config file: open c.json: no such file or directory\n"
	if code != 1 || stderr != want {
		t.Fatalf("exit %d, stderr %q, want %q", code, stderr, want)
	}
}

// TestVersionFromBuildInfo: --version reports the module version and the
// VCS revision and time the build recorded, and "unknown" for what it did
// not record (never an invented value).
func TestVersionFromBuildInfo(t *testing.T) {
	bi := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "example.org/m", Version: "v1.2.3"},
		Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}}
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		ok   bool
		want BuildInfo
	}{
		{"full", bi, true, BuildInfo{Program: "p", Module: "example.org/m", Version: "v1.2.3", Revision: "abc123", Time: "2026-01-02T03:04:05Z", Modified: true, GoVersion: "go1.26.0"}},
		{"none", nil, false, BuildInfo{Program: "p", Module: "unknown", Version: "unknown", Revision: "unknown", Time: "unknown", GoVersion: "unknown"}},
	}
	for _, tt := range tests {
		if got := buildInfoOf("p", tt.bi, tt.ok); got != tt.want {
			t.Errorf("%s: %+v, want %+v", tt.name, got, tt.want)
		}
	}
	code, out, _ := runApp(t, "--version", "--json")
	var b BuildInfo
	if code != 0 || json.Unmarshal([]byte(out), &b) != nil || b.Program != "x" || b.GoVersion == "" {
		t.Fatalf("--version --json: %d %q", code, out)
	}
	if code, out, _ := runApp(t, "--version"); code != 0 || !strings.HasPrefix(out, "x ") || !strings.Contains(out, "revision ") {
		t.Fatalf("--version: %d %q", code, out)
	}
}

// TestCompletionScripts: each shell gets a script that registers a
// completion for the program and asks the program for the candidates
// ("x __complete WORD..."), which are that command's flags after "-"; an
// unknown shell is a usage error.
func TestCompletionScripts(t *testing.T) {
	register := map[string]string{"bash": "complete -o bashdefault -o default -F _x_complete x", "zsh": "compdef _x x", "fish": "complete -c x "}
	for sh, reg := range register {
		code, out, _ := runApp(t, "completion", sh)
		if code != 0 || !strings.Contains(out, reg) || !strings.Contains(out, " __complete ") {
			t.Errorf("%s: %d %q", sh, code, out)
		}
	}
	code, out, _ := runApp(t, "__complete", "build", "--k")
	if code != 0 || out != "--key\n" {
		t.Errorf("x build --k<TAB>: %d %q", code, out)
	}
	if code, _, _ := runApp(t, "completion", "tcsh"); code != 2 {
		t.Fatalf("unknown shell: exit %d", code)
	}
}

// TestHonestDefaultWithColon: a default written "(default: X)" in the
// usage is shown once, never followed by urfave/cli's "(default: 0)".
func TestHonestDefaultWithColon(t *testing.T) {
	app := &cli.App{Name: "x", Commands: []*cli.Command{{Name: "c", Flags: []cli.Flag{
		&cli.Uint64Flag{Name: "now", Usage: "at `MS` (default: now)"},
		&cli.DurationFlag{Name: "timeout", Usage: "after `D` (default: no limit; each request has its own)"},
	}, Action: func(*cli.Context) error { return nil }}}}
	var out bytes.Buffer
	if code := Run(context.Background(), app, &Env{Stdout: &out, Stderr: &out}, []string{"x", "c", "--help"}); code != 0 {
		t.Fatal(code)
	}
	if strings.Contains(out.String(), "(default: 0") || !strings.Contains(out.String(), "at MS (default: now)") ||
		!strings.Contains(out.String(), "(default: no limit; each request has its own)") {
		t.Fatalf("help:\n%s", out.String())
	}
}
