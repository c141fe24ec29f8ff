package agent

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// Round 8 (docs/PERFORMANCE.md), PERF-5 (docs/SPEC-DECISIONS.md): a
// message counts among the writers the ledger's group commit expects from
// its arrival until it has its ticket, and a running ticket counts as in
// its handler only while the handler runs.

// TestEveryWayOutOfHandleEndsItsArrival: a count left behind by one path
// out of Handle would grow with each such message, and every later group
// of the agent would wait its whole window for writers who never come.
// After each kind of message, answered or refused at each step, the
// ledger expects nobody.
func TestEveryWayOutOfHandleEndsItsArrival(t *testing.T) {
	e := newEnv(t)
	_, ok := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	corrupt := append([]byte(nil), ok...)
	corrupt[len(corrupt)/2] ^= 0xff
	_, bad := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, map[string]any{"code": 7}))
	_, stranger := e.seal(e.stranger, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	_, ping := e.seal(e.caller, amp.TypePing, nil)
	_, item := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	_, batch := e.batchOf(e.caller, item, corrupt)
	for _, c := range []struct {
		name string
		msg  []byte
	}{
		{"an invocation", ok},
		{"its duplicate, answered from the ledger", ok},
		{"a message that does not verify", corrupt},
		{"an invocation refused by its schema", bad},
		{"an invocation refused by the policy", stranger},
		{"a PING", ping},
		{"a BATCH with a good and a corrupt item", batch},
	} {
		e.agent.Handle(context.Background(), c.msg)
		if n := e.agent.Ledger().Expected(); n != 0 {
			t.Fatalf("after %s the ledger expects %d writers, want 0", c.name, n)
		}
	}
	if _, err := e.agent.InvokeLocal(context.Background(), localTranslate(t, e, "")); err != nil {
		t.Fatal(err)
	}
	if n := e.agent.Ledger().Expected(); n != 0 {
		t.Fatalf("after a local call the ledger expects %d writers, want 0", n)
	}
}

// TestHandlerThatRunsLongIsNotAnExpectedWriter: an invocation counts as a
// writer on its way until its handler starts and again once it returns,
// but not while it runs: a handler may run for minutes, and the groups of
// other callers must not wait for it.
func TestHandlerThatRunsLongIsNotAnExpectedWriter(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	e := newEnv(t, withHandler(reviewID, func(ctx context.Context, p any) (any, error) {
		close(started)
		<-release
		return map[string]any{"issues": []any{}, "version": "long"}, nil
	}))
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	done := make(chan error, 1)
	go func() {
		_, err := e.agent.Handle(context.Background(), msg)
		done <- err
	}()
	<-started
	n := e.agent.Ledger().Expected()
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("while its handler runs the ledger expects %d writers, want 0", n)
	}
	if n := e.agent.Ledger().Expected(); n != 0 {
		t.Fatalf("after the reply the ledger expects %d writers, want 0", n)
	}
}

// TestCopyWaitingForTheFirstIsNotAnExpectedWriter: a copy of a message
// whose first copy is being processed waits for it, as long as its
// handler runs; counted meanwhile, a sender retrying a long invocation
// would hold every group of the agent to its window.
func TestCopyWaitingForTheFirstIsNotAnExpectedWriter(t *testing.T) {
	e := newEnv(t)
	m, _ := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewID, goodParams))
	l := e.agent.Ledger()
	first, err := l.Start(m.From, m.ID, e.clock.Now().Add(time.Hour))
	if err != nil || first.Ticket == nil {
		t.Fatal(first.State, err)
	}
	defer first.Ticket.Abandon()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the copy gives up its wait at once
	arrival := l.Expect()
	if _, err := e.agent.claim(ctx, m, m.From, &arrival); err == nil {
		t.Fatal("the copy claimed a key held by its first copy")
	}
	if n := l.Expected(); n != 1 {
		t.Fatalf("the first copy's ticket and a copy that waited for it: %d writers expected, want 1", n)
	}
	arrival.Done()
}

// TestLocalCallsWaitingForASlotAreNotExpectedWriters: a local call (the
// MCP bridge's, for a network caller whose token it accepted) counts
// among the writers the group commit expects only once it has its
// processing slot, as a message to Handle does once it has its slot and
// verifies (threat: an MCP client with 256 calls waiting for a slot held
// every group commit of the agent's durable callers to its whole window
// for writers who were not coming). With every slot taken, 32 local calls
// wait for one; the ledger expects none of them. The slots are taken by
// count (the agent's 2 per CPU, less the one the Reserve rule keeps from
// a caller that holds the others), not until a short Enter times out: on
// a loaded machine such a probe could give up with a slot still free.
func TestLocalCallsWaitingForASlotAreNotExpectedWriters(t *testing.T) {
	e := newEnv(t)
	var held []func()
	for range 2*runtime.GOMAXPROCS(0) - 1 {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a hang guard
		_, done, err := e.agent.cpu.Enter(ctx)
		cancel()
		if err != nil {
			t.Fatalf("test setup: slot %d of the agent's %d: %v", len(held)+1, 2*runtime.GOMAXPROCS(0), err)
		}
		held = append(held, done)
	}
	// Every slot is taken: a further Enter waits (and gives up here).
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	if _, done, err := e.agent.cpu.Enter(ctx); err == nil {
		done()
		t.Fatalf("test setup: a slot is still free after %d were taken (the test proves nothing)", len(held))
	}
	cancel()
	calls := make(chan error, 32)
	for range 32 {
		go func() {
			_, err := e.agent.InvokeLocal(context.Background(), localTranslate(t, e, ""))
			calls <- err
		}()
	}
	// While they wait (the slots stay taken), sample for 200 ms.
	n := 0
	for end := time.Now().Add(200 * time.Millisecond); time.Now().Before(end); time.Sleep(time.Millisecond) {
		n = max(n, e.agent.Ledger().Expected())
	}
	for _, done := range held {
		done()
	}
	for range 32 {
		if err := <-calls; err != nil {
			t.Fatal(err)
		}
	}
	if n != 0 {
		t.Fatalf("with 32 local calls waiting for a processing slot the ledger expects %d writers, want 0", n)
	}
}
