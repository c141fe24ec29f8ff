package bundlebuild

import (
	"runtime"
	"sync/atomic"
	"testing"
)

// TestPanickingProgressLeavesNoCheckRunningAfterTheBuildReturns: the
// results of the schema checks are consumed on the calling goroutine,
// which calls the embedder's progress function; runCharged stopped its
// workers only when consume returned. A panic there (an embedder's
// progress callback, recovered by the embedder) unwound past the pool
// with its workers still checking schemas, the dispatcher still handing
// them out, and each charge they took still moving the process's soft
// memory limit (memoryLimit.follow) after the build's deferred restore
// had put it back (threat: an embedding process left with a lowered
// memory limit and goroutines holding parse trees after a build it
// recovered from). Expected: nothing of the pool runs once it has
// returned, by a panic too: it stops and waits for its workers first.
func TestPanickingProgressLeavesNoCheckRunningAfterTheBuildReturns(t *testing.T) {
	var active atomic.Int64
	var quit atomic.Bool
	defer quit.Store(true) // frees a worker left running
	started := make(chan struct{})
	work := func(i int, c *charge) int {
		active.Add(1)
		defer active.Add(-1)
		if i == 1 {
			close(started)
			for c.to(1) && !quit.Load() {
				runtime.Gosched()
			}
		}
		return i
	}
	consume := func(i, _ int) error {
		if i == 0 {
			<-started
			panic("progress callback")
		}
		return nil
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the panic was lost")
			}
		}()
		runCharged(2, 4, newByteBudget(64, nil), func(int) int64 { return 1 }, work, consume)
	}()
	if n := active.Load(); n != 0 {
		t.Fatalf("%d schema checks still running after the pool returned by a panic", n)
	}
}
