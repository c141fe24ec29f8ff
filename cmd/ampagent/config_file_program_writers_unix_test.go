//go:build unix

package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestHandlerProgramAnotherUserMayWriteIsRefused: the agent runs a
// handler's program as its own user, with the caller's params and the
// agent's key file readable to it (CLI-49). The config file naming the
// program is refused when another user may write it (CLI-54), but the
// program itself, and the folders on its way, were never judged (CLI-38
// left them to the operator): a program group or others may write, one
// in a folder they may write (where they replace it, or plant it under
// a link's name), or one another user owns, let that user run code as
// the agent's user at the next call. Such a handler does not run: serve
// refuses to start (handler_program_missing, the reason and a hint to
// chown and chmod go-w), and with --allow-missing-handlers, or under
// `ampagent mcp`, each call fails 5001 handler_failed without a run. A
// sticky folder (/tmp) others may write is taken for a program its
// owner put there, not for one missing there, which anyone could create
// after the load (CLI-70).
func TestHandlerProgramAnotherUserMayWriteIsRefused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		setup  func(t *testing.T, base string) []string // the handler's command
		root   bool                                     // needs root (chown to another user)
		refuse bool
		plant  bool // the program is written once the config is loaded
	}{
		{"a program only its owner may write", func(t *testing.T, base string) []string {
			return []string{program(t, base, "safe", 0o755, 0o755)}
		}, false, false, false},
		{"a program group may write", func(t *testing.T, base string) []string {
			return []string{program(t, base, "safe", 0o755, 0o775)}
		}, false, true, false},
		{"a program others may write", func(t *testing.T, base string) []string {
			return []string{program(t, base, "safe", 0o755, 0o757)}
		}, false, true, false},
		{"a program in a folder group may write", func(t *testing.T, base string) []string {
			return []string{program(t, base, "open", 0o775, 0o755)}
		}, false, true, false},
		{"a program found in a PATH folder others may write", func(t *testing.T, base string) []string {
			program(t, base, "open", 0o777, 0o755)
			t.Setenv("PATH", filepath.Join(base, "open"))
			return []string{"prog"}
		}, false, true, false},
		{"a program in a folder above one others may write", func(t *testing.T, base string) []string {
			mkdir(t, filepath.Join(base, "open"), 0o777)
			return []string{program(t, filepath.Join(base, "open"), "safe", 0o755, 0o755)}
		}, false, true, false},
		{"a link to a safe program in a folder others may write", func(t *testing.T, base string) []string {
			p := program(t, base, "safe", 0o755, 0o755)
			mkdir(t, filepath.Join(base, "open"), 0o777)
			return []string{link(t, p, filepath.Join(base, "open", "prog"))}
		}, false, true, false},
		{"a safe link to a program in a folder others may write", func(t *testing.T, base string) []string {
			p := program(t, base, "open", 0o777, 0o755)
			mkdir(t, filepath.Join(base, "safe"), 0o755)
			return []string{link(t, p, filepath.Join(base, "safe", "prog"))}
		}, false, true, false},
		{"a safe link to a safe program through a relative link", func(t *testing.T, base string) []string {
			program(t, base, "safe", 0o755, 0o755)
			mkdir(t, filepath.Join(base, "links"), 0o755)
			return []string{link(t, "../safe/prog", filepath.Join(base, "links", "prog"))}
		}, false, false, false},
		{"a program its owner put in a sticky folder", func(t *testing.T, base string) []string {
			return []string{program(t, base, "sticky", os.ModeSticky|0o777, 0o755)}
		}, false, false, false},
		{"a program missing from a sticky folder, planted after the load", func(t *testing.T, base string) []string {
			mkdir(t, filepath.Join(base, "sticky"), os.ModeSticky|0o777)
			return []string{filepath.Join(base, "sticky", "prog")}
		}, false, true, true},
		{"a program another user owns", func(t *testing.T, base string) []string {
			p := program(t, base, "safe", 0o755, 0o755)
			chown(t, p)
			return []string{p}
		}, true, true, false},
		{"a program in a folder another user owns", func(t *testing.T, base string) []string {
			p := program(t, base, "safe", 0o755, 0o755)
			chown(t, filepath.Dir(p))
			return []string{p}
		}, true, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.root && os.Geteuid() != 0 {
				t.Skip("giving a file to another user needs root")
			}
			base := t.TempDir()
			cmd := tc.setup(t, base)
			cfgFile := writeConfig(t, map[string]any{"handlers": map[string]any{"org.example.p:1.0.0": map[string]any{"command": cmd}}})
			_, err := serveConfigOf(t, "--config", cfgFile)
			if !tc.refuse {
				if err != nil {
					t.Fatalf("a program only the agent's user may write is refused: %v", err)
				}
			} else if amp.NameOf(err) != "handler_program_missing" || !exposedReason(err) {
				t.Fatalf("serve starts with a program another user may write: %v", err)
			}
			// Started anyway (or under mcp, which has no start check): a
			// call runs the program only where it is not refused.
			cfg, err := serveConfigOf(t, "--config", cfgFile, "--allow-missing-handlers")
			if err != nil {
				t.Fatal(err)
			}
			if tc.plant {
				program(t, base, "sticky", 0, 0o755)
			}
			out, err := runProgram("org.example.p:1.0.0", cfg.Handlers["org.example.p:1.0.0"], slog.New(slog.DiscardHandler), nil)(context.Background(), map[string]any{})
			switch {
			case !tc.refuse && err != nil:
				t.Fatalf("the program did not run: %v", err)
			case tc.refuse && err == nil:
				t.Fatalf("the program another user may write ran: %v", out)
			case tc.refuse && amp.NameOf(err) != "handler_failed":
				t.Fatalf("the refused program's call: %v, want handler_failed", err)
			}
		})
	}
}

// program writes an executable script in folder base/dir (mode dirMode,
// made if missing) with mode fileMode, and returns its path.
func program(t *testing.T, base, dir string, dirMode, fileMode os.FileMode) string {
	t.Helper()
	d := filepath.Join(base, dir)
	if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
		mkdir(t, d, dirMode)
	}
	p := filepath.Join(d, "prog")
	writeProgram(t, p, `{"ran":true}`)
	if err := os.Chmod(p, fileMode); err != nil {
		t.Fatal(err)
	}
	return p
}

// mkdir makes folder d with mode m (the umask not applied).
func mkdir(t *testing.T, d string, m os.FileMode) {
	t.Helper()
	if err := os.Mkdir(d, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(d, m); err != nil {
		t.Fatal(err)
	}
}

// link makes a symbolic link at at to target, and returns at.
func link(t *testing.T, target, at string) string {
	t.Helper()
	if err := os.Symlink(target, at); err != nil {
		t.Fatal(err)
	}
	return at
}

// chown gives p to another user (nobody, uid 65534).
func chown(t *testing.T, p string) {
	t.Helper()
	if err := os.Chown(p, 65534, 65534); err != nil {
		t.Fatal(err)
	}
}

// exposedReason reports whether err says why another user could change
// the program, not merely that it is missing.
func exposedReason(err error) bool {
	for _, why := range []string{"may be written by group or others", "is owned by another user", "may create it"} {
		if strings.Contains(err.Error(), why) {
			return true
		}
	}
	return false
}
