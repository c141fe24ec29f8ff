package agent

import (
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
)

// TestLongestAnswerCoversABatchRunningPastItsDeadline: a BATCH starts
// items until MaxBatchDuration and the last one started may then run its
// whole timeout, so its reply comes up to MaxBatchDuration + MaxTimeout
// after the request. Threat: ampagent gave the HTTP write deadline
// MaxTimeout + 30 s (90 s by default), and a batch whose items each ran
// within their own timeout had its reply lost after every item ran (and
// was recorded). Bounds.LongestAnswer is what a transport's write
// deadline must cover (AGENT-13).
func TestLongestAnswerCoversABatchRunningPastItsDeadline(t *testing.T) {
	if got, want := (Bounds{}).LongestAnswer(), 2*time.Minute; got != want {
		t.Fatalf("LongestAnswer with the defaults is %v, want MaxBatchDuration + MaxTimeout = %v", got, want)
	}
	var e *env
	e = newEnv(t, withHandler(reviewID, func(ctx context.Context, p any) (any, error) {
		e.clock.Add(e.agent.cfg.MaxTimeout - time.Second) // within its own timeout
		return map[string]any{"issues": []any{}, "version": "ran"}, nil
	}))
	var items [][]byte
	for range 3 {
		_, m := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
		items = append(items, m)
	}
	_, container := e.batchOf(e.caller, items...)
	start := e.clock.Now()
	_, replies, _ := e.batchReplies(e.caller, container)
	took := e.clock.Now().Sub(start)
	if len(replies) != 3 || resultOf(t, replies[1]).Status != capability.StatusSuccess {
		t.Fatalf("%d replies; the second item, started before the batch's deadline, must have run", len(replies))
	}
	if old := e.agent.cfg.MaxTimeout + 30*time.Second; took <= old {
		t.Fatalf("the batch took %v, not past MaxTimeout + 30 s (%v): the test shows nothing", took, old)
	}
	if most := e.agent.cfg.Bounds.LongestAnswer(); took > most {
		t.Fatalf("the batch took %v, past LongestAnswer (%v)", took, most)
	}
}
