package agent

import (
	"context"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestAdmitReleasedWhenInlineHandlerGoexits: with Config.InlineHandlers
// the handler runs on the request's goroutine, and one that ends it with
// runtime.Goexit (t.FailNow in a handler, a library's os-exit shim) never
// returns a value (threat: an admission released only after a normal
// return would then be held for good, and the embedder's bound would
// count a handler that no longer runs until every invocation is refused).
// Its admission is released all the same, exactly once; a handler that
// returns normally is released once too, not before it returned
// (AGENT-25).
func TestAdmitReleasedWhenInlineHandlerGoexits(t *testing.T) {
	const id = "org.agentries.code-review:2.1.0"
	var released, releasedWhileRunning atomic.Int64
	var goexit atomic.Bool
	e := newEnv(t, withMemoryLedger(), withHandler(id, func(ctx context.Context, p any) (any, error) {
		releasedWhileRunning.Store(released.Load())
		if goexit.Load() {
			runtime.Goexit()
		}
		return map[string]any{}, nil
	}), withConfig(func(c *Config) {
		c.InlineHandlers = true
		c.Admit = func(context.Context, Admission) (func(), error) { return func() { released.Add(1) }, nil }
	}))

	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeWithin(t, 5000))
	if _, err := e.agent.Handle(context.Background(), msg); err != nil {
		t.Fatal(err)
	}
	if releasedWhileRunning.Load() != 0 {
		t.Fatal("the admission was released before the inline handler returned")
	}
	waitCount(t, &released, 1, "admissions released after an inline handler returned")

	goexit.Store(true)
	_, msg = e.seal(e.caller, amp.TypeCapInvoke, invokeWithin(t, 5000))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = e.agent.Handle(context.Background(), msg)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the request goroutine did not end")
	}
	waitCount(t, &released, 2, "admissions released after an inline handler's runtime.Goexit")
}
