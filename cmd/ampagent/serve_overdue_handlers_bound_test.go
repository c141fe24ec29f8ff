//go:build unix

package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// serveConfigOf resolves args as 'ampagent serve' does (loadServeConfig:
// the config file, the flags over it, Validate) without opening anything.
func serveConfigOf(t *testing.T, args ...string) (*serveConfig, error) {
	t.Helper()
	env := &cliutil.Env{Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}}
	cmd := serveCommand(env)
	var got *serveConfig
	cmd.Action = func(c *cli.Context) error {
		cfg, err := loadServeConfig(c)
		got = cfg
		return err
	}
	app := &cli.App{Name: "ampagent", Commands: []*cli.Command{cmd}, Writer: env.Stdout, ErrWriter: env.Stderr,
		ExitErrHandler: func(*cli.Context, error) {}}
	err := app.Run(append([]string{"ampagent", "serve", "--listen", "127.0.0.1:0"}, args...))
	return got, err
}

// TestServeOverdueHandlerBoundReachesTheAgent: the agent counts the
// detached handlers still running past their deadline, 256 in all by
// default (AGENT-15); an operator whose handlers legitimately overrun
// (or who wants a tighter bound on what they hold) had no way to set it
// (threat: a bound the operator cannot fit to the host, so the host's
// memory or processes run out before it bites, or honest callers are
// refused long before). --max-overdue-handlers and the config file's
// "max_overdue_handlers" (the flag over the file) are the agent's
// Bounds.MaxOverdueHandlers, at a start and at every reload
// (agentConfig); left out, the agent's default.
func TestServeOverdueHandlerBoundReachesTheAgent(t *testing.T) {
	file := writeConfig(t, map[string]any{"max_overdue_handlers": 64})
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"left out: the agent's default", nil, agent.DefaultMaxOverdueHandlers},
		{"the config file's", []string{"--config", file}, 64},
		{"the flag's", []string{"--max-overdue-handlers", "1024"}, 1024},
		{"the flag over the file", []string{"--config", file, "--max-overdue-handlers", "8"}, 8},
		{"one: a share of one", []string{"--max-overdue-handlers", "1"}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := serveConfigOf(t, tc.args...)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			s := &server{env: &cliutil.Env{}, cfg: cfg}
			b := s.agentConfig(nil, nil, nil).Bounds
			if got := b.WithDefaults().MaxOverdueHandlers; got != tc.want {
				t.Fatalf("the agent's MaxOverdueHandlers is %d, want %d", got, tc.want)
			}
		})
	}
}

// TestServeOverdueHandlerBoundUnderOneIsRefusedBeforeAnything: a bound of
// 0 or less would read as the default (another bound than the one asked
// for). Given as the flag it is a usage error (exit 2), in the file an
// invalid_config (exit 1), each naming the setting and its minimum,
// before the key, the store or a listener is touched (the key and store
// named do not exist: a later check would answer key_unreadable) and
// with nothing left beside the store.
func TestServeOverdueHandlerBoundUnderOneIsRefusedBeforeAnything(t *testing.T) {
	for _, tc := range []struct {
		name string
		args func(t *testing.T) []string
		code string
		exit int
		msg  string
	}{
		{"flag 0", func(*testing.T) []string { return []string{"--max-overdue-handlers", "0"} }, "usage", 2, "--max-overdue-handlers must be at least 1"},
		{"flag negative", func(*testing.T) []string { return []string{"--max-overdue-handlers=-1"} }, "usage", 2, "--max-overdue-handlers must be at least 1"},
		{"file negative", func(t *testing.T) []string {
			return []string{"--config", writeConfig(t, map[string]any{"max_overdue_handlers": -1})}
		}, "invalid_config", 1, "max_overdue_handlers must be at least 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			args := append([]string{"--db", filepath.Join(dir, "none.db"), "--key", filepath.Join(dir, "none.key"), "--listen", "127.0.0.1:0"}, tc.args(t)...)
			r := serveRefusal(t, append([]string{"--json"}, args...)...)
			var doc struct {
				Error struct{ Code, Message string } `json:"error"`
			}
			if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil {
				t.Fatalf("not an error document: %v\n%s", err, r.stdout)
			}
			if r.code != tc.exit || doc.Error.Code != tc.code || !strings.Contains(doc.Error.Message, tc.msg) {
				t.Fatalf("got %s exit %d %q, want %s exit %d naming %q", doc.Error.Code, r.code, doc.Error.Message, tc.code, tc.exit, tc.msg)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("a refused start left %d files beside the store", len(left))
			}
		})
	}
	// Not a number: a malformed flag value, a usage error too.
	if _, err := serveConfigOf(t, "--max-overdue-handlers", "many"); err == nil {
		t.Fatal("--max-overdue-handlers many was taken")
	}
}
