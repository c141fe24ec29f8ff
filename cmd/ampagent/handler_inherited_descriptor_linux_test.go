//go:build linux

package main

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"
)

// TestDescriptorTheAgentInheritedIsNotPassedToHandlerPrograms: the agent
// holds a descriptor it did not open itself, without close-on-exec (one
// its parent left open: a shell's "3<key.pem", a supervisor's socket, a
// file given as /dev/fd/N; Go's os/exec passes every such descriptor on
// to the processes it starts), and a handler program, which runs with the
// caller's params, reads it (threat: a key file deleted or unreadable by
// path, a socket of the agent's, reaching the program; where the program
// runs as another user through a wrapper that keeps descriptors, such as
// setpriv or runuser, the key the operator kept from that user). The
// reaper marks every descriptor above stderr close-on-exec before it
// starts the program (docs/SPEC-DECISIONS.md CLI-67).
func TestDescriptorTheAgentInheritedIsNotPassedToHandlerPrograms(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(t *testing.T) int // a descriptor without close-on-exec
	}{
		{"a deleted key file", func(t *testing.T) int {
			p := filepath.Join(t.TempDir(), "agent.key")
			if err := os.WriteFile(p, []byte("secret-key-bytes\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if err := os.Remove(p); err != nil { // reached by the descriptor alone
				t.Fatal(err)
			}
			return dupInherited(t, int(f.Fd()))
		}},
		{"a socket", func(t *testing.T) int {
			fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0) // no SOCK_CLOEXEC
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { syscall.Close(fds[0]); syscall.Close(fds[1]) })
			return fds[0]
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fd := strconv.Itoa(tc.open(t))
			// The program reads the descriptor's first line through
			// /dev/fd/N, or says it has none.
			script := `if IFS= read -r s </dev/fd/` + fd + ` 2>/dev/null || [ -e /proc/$$/fd/` + fd + ` ]; then printf '"held: %s"' "$s"; else printf '"closed"'; fi`
			h, _ := shellProgram(t, script, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			out, err := h(ctx, map[string]any{})
			if err != nil {
				t.Fatalf("the handler failed: %v", err)
			}
			if out != "closed" {
				t.Fatalf("the handler program held the agent's descriptor %s: %v", fd, out)
			}
		})
	}
}

// dupInherited is a copy of fd without close-on-exec, as a descriptor the
// agent inherited from its parent is; closed when the test ends.
func dupInherited(t *testing.T, fd int) int {
	t.Helper()
	nfd, err := syscall.Dup(fd) // dup(2) clears FD_CLOEXEC
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { syscall.Close(nfd) })
	return nfd
}
