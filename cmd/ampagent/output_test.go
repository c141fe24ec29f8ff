package main

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/internal/testalloc"
)

// TestHandlerOutputFloodIsCapped: a handler program that prints 1 GiB on
// stdout, or 100 MiB on stderr, costs the agent a bounded amount of memory
// and one bounded log line (threat: a buggy or hostile program exhausting
// the agent's memory, or its log, through output the agent buffers).
func TestHandlerOutputFloodIsCapped(t *testing.T) {
	cases := []struct {
		name      string
		script    string
		maxAlloc  uint64 // bytes the agent may allocate for the call
		maxLogged int    // bytes of the longest log line
		wantName  amp.ErrName
	}{
		{"stdout 1 GiB", `head -c 1073741824 /dev/zero`, 64 << 20, 1 << 10, "handler_failed"},
		{"stderr 100 MiB then fail", `head -c 104857600 /dev/zero | tr '\0' x >&2; exit 1`, 16 << 20, maxLoggedStderr + 1<<10, "handler_failed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			log := slog.New(slog.NewTextHandler(&logs, nil))
			h := runProgram("org.example.flood:1.0.0", execHandler{Command: []string{"/bin/sh", "-c", tc.script}}, log, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			// One call, run again only if over the bound: each streams
			// up to 1 GiB through the agent.
			var err error
			got := testalloc.Within(tc.maxAlloc, func() { _, err = h(ctx, map[string]any{}) })
			if amp.NameOf(err) != tc.wantName {
				t.Fatalf("error %v, want %s", err, tc.wantName)
			}
			if got > tc.maxAlloc {
				t.Fatalf("the call allocated %d MiB, bound %d MiB", got>>20, tc.maxAlloc>>20)
			}
			for _, line := range strings.Split(logs.String(), "\n") {
				if len(line) > tc.maxLogged {
					t.Fatalf("a log line of %d bytes, bound %d", len(line), tc.maxLogged)
				}
			}
		})
	}
}
