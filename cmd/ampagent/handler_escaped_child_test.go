//go:build linux

package main

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"testing"
	"time"
)

// TestHandlerChildThatLeftItsSessionDiesWithIt: attack: a caller's params
// make a handler program start a daemon that leaves the program's process
// group and session (setsid, then a second fork whose parent exits: the
// daemon is nobody's child in the group) and then return its result, or
// hang until the invocation's deadline. The group kill (CLI-34, CLI-39)
// does not reach it: it outlived the invocation, counted against nothing,
// one more process for good per invocation. The program runs under a
// reaper of its own (a child subreaper) that kills and reaps everything it
// started before the invocation ends (CLI-40).
func TestHandlerChildThatLeftItsSessionDiesWithIt(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program")
	}
	for _, tc := range []struct {
		name, tail string
		cancel     bool
	}{
		{"the program returns", `echo '{"ok":true}'`, false},
		{"the program is killed at its end", `sleep 60`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h, pidFile := shellProgram(t, setsidDaemon+tc.tail, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			if tc.cancel {
				// The invocation ends (a cancel: the deadline's kill) once
				// the daemon runs.
				go func() {
					for ctx.Err() == nil {
						if _, err := os.Stat(pidFile); err == nil {
							cancel()
							return
						}
						time.Sleep(10 * time.Millisecond)
					}
				}()
			}
			_, err := h(ctx, map[string]any{})
			switch {
			case tc.cancel && !errors.Is(err, context.Canceled):
				t.Fatalf("the handler answered %v, want it canceled", err)
			case !tc.cancel && err != nil:
				t.Fatalf("the handler failed: %v", err)
			}
			pid := spawnedPid(t, pidFile)
			// The reaper reaps all before it exits, and the handler
			// returns only after it exited: no wait is needed.
			if alive(pid) {
				t.Fatalf("the daemon %d the handler program started outside its group still runs after the invocation ended", pid)
			}
		})
	}
}
