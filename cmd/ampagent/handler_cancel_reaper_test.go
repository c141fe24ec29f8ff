//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestHandlerCancelStopsItsReaperNotItsGroup: attack: a caller's params
// make a handler program start a child in its group and a daemon that
// left it (setsid, a double fork), then hang, and the invocation is
// canceled (its deadline, a cancel, an output over its cap). A cancel that
// killed the program's process group, the reaper its leader, would end
// the reaper first and leave the daemon to init; confineProgram installed
// such a kill, which on Linux underReaper replaced (dead code, found in
// review). The cancel tells the reaper to stop (SIGTERM): it kills and reaps
// all the program started and exits by its own call, so the agent does
// not log a killed reaper, and neither child outlives the invocation
// (CLI-40, CLI-48).
func TestHandlerCancelStopsItsReaperNotItsGroup(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program")
	}
	var logs bytes.Buffer
	h, daemonFile := shellProgram(t, setsidDaemon+`sleep 300 </dev/null >/dev/null 2>&1 & echo $! > "$1.group"; sleep 60`, &logs)
	groupFile := daemonFile + ".group"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	go func() { // the invocation is canceled once both children run
		for ctx.Err() == nil {
			if b, err := os.ReadFile(groupFile); err == nil && bytes.HasSuffix(b, []byte("\n")) {
				cancel()
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	if _, err := h(ctx, map[string]any{}); !errors.Is(err, context.Canceled) {
		t.Fatalf("the handler answered %v, want it canceled", err)
	}
	daemon, child := spawnedPid(t, daemonFile), spawnedPid(t, groupFile)
	if strings.Contains(logs.String(), "reaper was killed") {
		t.Errorf("the cancel killed the program's reaper:\n%s", logs.String())
	}
	for _, p := range []struct {
		what string
		pid  int
	}{{"the daemon that left the group", daemon}, {"the child in the group", child}} {
		if alive(p.pid) {
			t.Errorf("%s (%d) still runs after the invocation was canceled", p.what, p.pid)
		}
	}
}
