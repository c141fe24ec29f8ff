package agent

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestBatchWhoseCallerWentAwayStartsAndSignsNothingMore: attack: a caller
// sends a BATCH of many items and goes away (closes the connection) after
// the first. The container then went on through every item, each one
// refused for the cancelled context and answered by a signed ERROR, each
// signature after a wait for a CPU slot (PERF-6 parks the container for
// its items and takes a slot back to sign): work and slot waits for a
// reply no one reads. Now no item is started, and nothing more signed,
// once the caller's context is done: the batch ends with a retryable
// timeout error and the items left are not run (sent again, they run).
func TestBatchWhoseCallerWentAwayStartsAndSignsNothingMore(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ran atomic.Int64
	e := newEnv(t, withHandler(reviewID, func(ctx context.Context, p any) (any, error) {
		ran.Add(1)
		cancel() // the caller goes away while the first item runs
		return noop(ctx, p)
	}))
	var items [][]byte
	for range 8 {
		_, m := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
		items = append(items, m)
	}
	_, container := e.batchOf(e.caller, items...)
	reply, err := e.agent.Handle(ctx, container)
	if err == nil || amp.CodeOf(err) != amp.CodeTimeout {
		t.Fatalf("Handle of a batch whose caller went away: reply %d bytes, error %v; want a timeout error and no reply", len(reply), err)
	}
	if n := ran.Load(); n != 1 {
		t.Fatalf("the handler ran %d times, want only the item started before the caller went away", n)
	}
}
