//go:build linux

package admin

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/ampbundle/ampbundle/internal/cliutil"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestAgentStartedAtAnotherUsersSocketIsToldWhatToDo
//
// Attack: another user listens where an agent's admin socket goes (the
// store in a folder others may write). The agent refuses to start there
// (ADMIN-1), but 'ampagent serve' and 'ampagent mcp' printed only
// "another user's process (uid N) listens on the admin socket path":
// no path and no next step, where ampbundle's commands meeting the same
// socket gave a hint, each caller writing it again (three copies). An
// operator told only that goes looking for an agent of its own to stop,
// or restarts the agent until the other user's process goes, the
// planted socket still in place.
//
// Now (docs/SPEC-DECISIONS.md ADMIN-5): the refusal is born with its
// hint in internal/admin, Listen's (and so Serve's) saying to remove
// that socket, keep stores out of folders others may write or give the
// agent another one with --admin-socket, Dial's as before; the callers
// report the refusal and write no hint of their own.
func TestAgentStartedAtAnotherUsersSocketIsToldWhatToDo(t *testing.T) {
	sock := startForger(t)
	store, err := resolver.Open(filepath.Join(t.TempDir(), "store.db"), resolver.Options{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	for _, tc := range []struct {
		name string
		run  func() error
		want []string
	}{
		{"an agent starting there", func() error {
			srv, err := Serve(store, sock, nil)
			if err == nil {
				srv.Close()
			}
			return err
		}, []string{"where this agent's admin socket goes", "remove that socket", "--admin-socket"}},
		{"a command reading a held store through it", func() error {
			_, err := Dial(sock)
			return err
		}, []string{"where the agent's admin socket should be", "nothing was sent to it", "--admin-socket"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			env := &cliutil.Env{Stdin: strings.NewReader(""), Stdout: &stdout, Stderr: &stderr, Now: time.Now,
				Getenv: func(string) string { return "" }}
			var got error
			app := &cli.App{Name: "ampagent", Action: func(*cli.Context) error { got = tc.run(); return got }}
			if code := cliutil.Run(context.Background(), app, env, []string{"ampagent"}); code == 0 || !errors.Is(got, ErrForeignSocket) {
				t.Fatalf("exit %d, %v; want a failure of cause ErrForeignSocket", code, got)
			}
			_, hint, ok := strings.Cut(stderr.String(), "\nhint: ")
			if !ok {
				t.Fatalf("the refusal is printed with no hint:\n%s", stderr.String())
			}
			for _, w := range append([]string{sock}, tc.want...) {
				if !strings.Contains(hint, w) {
					t.Errorf("the hint does not say %q:\n%s", w, hint)
				}
			}
		})
	}
}
