package agent

import (
	"context"
	"sync"
	"testing"

	"github.com/ampbundle/ampbundle/amp"
)

// TestOverdueBurstOfOnePrincipalLocksOutOthers: a principal's
// overdue handlers beyond its share must not use up the other principals'
// room in Bounds.MaxOverdueHandlers.
//
// Attack: the overdue count is checked when an invocation is admitted, but
// an invocation becomes overdue only at its deadline. A caller with no
// overdue handler sends a burst of concurrent invocations of a capability
// whose handler hangs, each with a deadline long enough for all of them to
// be admitted (its ledger share holds about 128 running entries by
// default, far more for a capability with a small MaxResultBytes); at
// their deadline all become overdue at once, far past its share (1/8), up
// to and beyond the total. Today the total counts them all, so every
// other principal is refused 5004 handlers_overdue until the hung handlers
// return: for ever, if they never do.
//
// Should: a principal's overdue handlers count toward the total only up to
// its share, so that one principal (whose own invocations stay refused
// while it is at its share) cannot refuse the others.
func TestOverdueBurstOfOnePrincipalLocksOutOthers(t *testing.T) {
	const most, burst = 16, 24 // share 2; the burst alone is past the total
	release := make(chan struct{})
	releaseAll := sync.OnceFunc(func() { close(release) })
	defer releaseAll()
	started := make(chan struct{}, burst+1)
	e := newEnv(t, withMemoryLedger(), withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
		started <- struct{}{}
		<-release // ignores its context
		return nil, nil
	}), func(e *env) {
		e.cfg.MaxOverdueHandlers = most
		e.cfg.Policy = append(e.cfg.Policy.(Rules), Rule{Caller: e.stranger.DID, Prefix: "org.agentries"})
	})
	// Long enough that every invocation of the burst is admitted (its
	// handler started) before the first deadline passes.
	msgs := make([][]byte, burst)
	for i := range msgs {
		_, msgs[i] = e.seal(e.caller, amp.TypeCapInvoke, invokeWithin(t, 3000))
	}
	var wg sync.WaitGroup
	for _, msg := range msgs {
		wg.Go(func() {
			if _, err := e.agent.Handle(context.Background(), msg); err != nil {
				t.Error(err)
			}
		})
	}
	for range burst {
		<-started
	}
	wg.Wait() // every one answered 5003, its handler still running
	if _, reply := e.exchange(e.stranger, amp.TypeCapInvoke, invokeWithin(t, 2)); reply.Type != amp.TypeCapResult {
		t.Fatalf("another principal is refused while one principal's burst of %d hung handlers is overdue (share %d of %d): %+v",
			burst, max(most/8, 1), most, errorOf(t, reply))
	}
}
