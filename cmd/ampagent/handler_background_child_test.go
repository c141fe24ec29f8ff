//go:build unix

package main

import (
	"context"
	"testing"
	"time"
)

// TestHandlerBackgroundChildDiesWithIt: a caller's params make a handler
// program start a background child (a shell script's "cmd &", a helper
// that hangs on hostile input) and exit 0 with its result (threat: the
// group killed only when the invocation's context ends, so that a program
// that returns in time leaves its children running, counted against
// nothing, not the overdue handlers, not the requests in flight: each
// invocation adds a process for good). The group is the handler's and is
// killed once the program returned, whatever the outcome (CLI-34).
func TestHandlerBackgroundChildDiesWithIt(t *testing.T) {
	h, pidFile := shellProgram(t, `sleep 60 </dev/null >/dev/null 2>&1 & echo $! > "$1"; echo 1`, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := h(ctx, map[string]any{}); err != nil {
		t.Fatalf("the handler failed: %v", err)
	}
	pid := spawnedPid(t, pidFile) // the test's own child, killed at its end if it survived
	// SIGKILL is delivered at once; the child's exit (a zombie counts as
	// gone) may take a moment on a loaded machine: 10 s is a hang guard,
	// as a child that escaped the kill runs on for its whole 60 s.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if !alive(pid) { // serve_test.go
			return
		}
	}
	t.Fatalf("the handler's background child %d still runs after the handler returned", pid)
}
