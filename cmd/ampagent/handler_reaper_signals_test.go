//go:build linux

package main

import (
	"bytes"
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestHandlerProgramCannotStopOrCrashItsReaper: attack: a handler
// program (driven by its caller's params) starts a daemon that leaves its
// group and session, then signals its reaper ($PPID): SIGQUIT, SIGABRT,
// SIGTRAP or SIGSYS, on which Go's runtime ended the reaper with a stack
// dump, SIGTSTP or SIGTTIN, on which it stopped, SIGSTOP, which no
// process catches. A reaper that died
// left the daemon to init; one stopped reaped nothing until os/exec
// killed it after the deadline's grace, the daemon left to init again.
// The reaper takes every signal Go would end it on as SIGTERM (kill all,
// reap all, exit), drops the terminal's stop signals, and is sent SIGCONT
// with the deadline's SIGTERM. SIGKILL cannot be caught: the invocation
// fails and the agent's log says what may be left running (CLI-40,
// amended in review 115).
func TestHandlerProgramCannotStopOrCrashItsReaper(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid program")
	}
	type signalCase struct {
		name, tail   string
		deadline     time.Duration
		want         string // "": a result; an error name; "deadline"
		daemonEscape bool   // SIGKILL: not preventable, logged
	}
	cases := []signalCase{
		{"SIGTERM", `kill -TERM $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGQUIT, a stack dump in Go", `kill -QUIT $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGABRT, a stack dump in Go", `kill -ABRT $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGTRAP, a stack dump in Go", `kill -TRAP $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGSYS, a stack dump in Go", `kill -SYS $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGSEGV sent, a crash in Go", `kill -SEGV $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGBUS sent, a crash in Go", `kill -BUS $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGFPE sent, a crash in Go", `kill -FPE $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGILL sent, a crash in Go", `kill -ILL $PPID; sleep 60`, 30 * time.Second, "handler_failed", false},
		{"SIGTSTP, a stop", `kill -TSTP $PPID; echo '{"ok":true}'`, 30 * time.Second, "", false},
		{"SIGTTIN, a stop", `kill -TTIN $PPID; echo '{"ok":true}'`, 30 * time.Second, "", false},
		{"SIGSTOP, resumed at the deadline", `kill -STOP $PPID; echo '{"ok":true}'`, 3 * time.Second, "deadline", false},
		{"SIGKILL, logged", `kill -KILL $PPID; sleep 60`, 30 * time.Second, "handler_failed", true},
	}
	for _, sig := range stackFaultSignal() { // by number: sh may not know its name
		cases = append(cases, signalCase{"SIGSTKFLT, a stack dump in Go", "kill -" + strconv.Itoa(int(sig.(syscall.Signal))) + " $PPID; sleep 60", 30 * time.Second, "handler_failed", false})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			h, pidFile := shellProgram(t, setsidDaemon+tc.tail, &logs)
			ctx, cancel := context.WithTimeout(context.Background(), tc.deadline)
			defer cancel()
			_, err := h(ctx, map[string]any{})
			switch {
			case tc.want == "" && err != nil,
				tc.want == "deadline" && !errors.Is(err, context.DeadlineExceeded),
				tc.want != "" && tc.want != "deadline" && amp.NameOf(err) != amp.ErrName(tc.want):
				t.Fatalf("the handler answered %v, want %q", err, tc.want)
			}
			pid := spawnedPid(t, pidFile)
			if tc.daemonEscape {
				if !strings.Contains(logs.String(), "reaper was killed") {
					t.Fatalf("the reaper was killed and the log does not say so:\n%s", logs.String())
				}
				return
			}
			if alive(pid) {
				t.Fatalf("the daemon %d outlived the invocation whose program signaled its reaper", pid)
			}
		})
	}
}
