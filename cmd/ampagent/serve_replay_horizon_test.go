//go:build unix

package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/agent"
	"github.com/ampbundle/ampbundle/internal/cliutil"
)

// TestServeReplayHorizonOutOfRangeIsRefused: --replay-horizon takes 0 to
// the agent's longest ttl (docs/SPEC-DECISIONS.md AGENT-14); a negative one
// (which the library would read as 0, no horizon: an operator asking for
// one would run without) and one over the longest ttl are usage errors,
// refused before anything is opened.
func TestServeReplayHorizonOutOfRangeIsRefused(t *testing.T) {
	most := agent.Bounds{}.WithDefaults().MaxTTL
	for _, v := range []string{"-1s", (most + time.Second).String()} {
		t.Run(v, func(t *testing.T) {
			dir := t.TempDir()
			code, exit := serveFails(t, "--db", filepath.Join(dir, "none.db"), "--key", filepath.Join(dir, "none.key"),
				"--listen", "127.0.0.1:0", "--replay-horizon", v)
			if code != "usage" || exit != 2 {
				t.Fatalf("--replay-horizon %s: got %s exit %d, want usage exit 2", v, code, exit)
			}
			if left, _ := os.ReadDir(dir); len(left) != 0 {
				t.Fatalf("a refused start left %d files beside the store", len(left))
			}
		})
	}
}

// TestServeReplayHorizonReachesTheAgent: the flag is the agent's
// Bounds.ReplayHorizon, at a start and at every reload (agentConfig).
func TestServeReplayHorizonReachesTheAgent(t *testing.T) {
	s := &server{env: &cliutil.Env{}, cfg: &serveConfig{serveFlags: serveFlags{replayHorizon: 36 * time.Hour}}}
	if got := s.agentConfig(nil, nil, nil).ReplayHorizon; got != 36*time.Hour {
		t.Fatalf("the agent's replay horizon is %v, want the flag's 36h", got)
	}
}
