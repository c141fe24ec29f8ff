package offlineschema

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"
)

// victimChild is the environment variable that makes the test binary run
// one victim in a child process (runVictimChild), so that a run that
// would burn CPU for minutes is killed at its deadline.
const victimChild = "AMPBUNDLE_VICTIM_CHILD"

// victimLimit is limit in this build: limit × victimSlowdown. A limit is
// set between what a defended run costs (a refusal before the library
// runs: well under a second) and what the undefended run costs (5 s and
// more), so the child is killed only when the defence is missing; under
// the race detector both sides are slower alike.
func victimLimit(limit time.Duration) time.Duration { return limit * victimSlowdown }

// runVictimChild runs the test named name in a child test binary with
// victimChild set to name, and kills it after victimLimit(limit). It
// returns the child's output and whether it ran past that.
func runVictimChild(t *testing.T, name string, limit time.Duration) (string, bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), victimLimit(limit))
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+name+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), victimChild+"="+name)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), true
	}
	if err != nil {
		t.Fatalf("child %s failed: %v\n%s", name, err, out)
	}
	return string(out), false
}
