package agent

import (
	"bytes"
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// admissionReason is the details.reason of an ERROR reply ("" if none).
func admissionReason(t *testing.T, b amp.ErrorBody) string {
	t.Helper()
	var d map[string]any
	if len(b.Details) > 0 {
		must(t, amp.Unmarshal(b.Details, &d))
	}
	r, _ := d["reason"].(string)
	return r
}

// waitCount waits until n == want: a goroutine's defer, in a moment; the
// 10 s is a hang guard with room for a loaded machine (a release that
// never comes fails the same).
func waitCount(t *testing.T, n *atomic.Int64, want int64, what string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); n.Load() != want; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %d, want %d", what, n.Load(), want)
		}
	}
}

// TestAdmitRefusalUnrecordedRetriedIDRunsOnce: an embedder's handlers
// hold something scarce (processes: ampagent's handler programs), and an
// invocation beyond the embedder's bound must be refused before the agent
// records its run (threat: a refusal returned by the handler is the id's
// recorded final result, so the sender's retry with the same message id
// got the refusal back and never ran; waiting inside the handler instead
// held a listener slot and a goroutine for the whole deadline). The
// Hooks.Admit refusal is 5004 with the embedder's reason, retryable and
// unrecorded; the very same message, once admitted, runs its handler once,
// and its admission is released when the handler returned; a third copy
// is the recorded reply, no second run (AGENT-25).
func TestAdmitRefusalUnrecordedRetriedIDRunsOnce(t *testing.T) {
	const id = "org.agentries.code-review:2.1.0"
	var busy atomic.Bool
	var runs, admitted, released atomic.Int64
	var seen Admission
	busy.Store(true)
	e := newEnv(t, withMemoryLedger(), func(e *env) {
		echo := e.echo(id)
		e.handlers[id] = func(ctx context.Context, p any) (any, error) {
			runs.Add(1)
			return echo(ctx, p)
		}
		e.cfg.Admit = func(_ context.Context, in Admission) (func(), error) {
			seen = in
			if busy.Load() {
				return nil, amp.Named(amp.CodeOverloaded, "programs_busy", "busy").WithDetails(map[string]any{"reason": "programs_busy"})
			}
			admitted.Add(1)
			return func() { released.Add(1) }, nil
		}
	})
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeWithin(t, 5000))
	raw, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	b := errorOf(t, e.receive(e.caller, raw))
	if b.Code != amp.CodeOverloaded || b.Retry == nil || !*b.Retry || admissionReason(t, b) != "programs_busy" {
		t.Fatalf("refused with %d %q retry %v reason %q, want a retryable 5004 programs_busy", b.Code, b.Message, b.Retry, admissionReason(t, b))
	}
	if runs.Load() != 0 {
		t.Fatalf("the handler ran %d times for a refused invocation", runs.Load())
	}
	if seen.Capability != id || seen.Caller != e.caller.DID || seen.Principal != e.caller.DID {
		t.Fatalf("the hook was asked about %+v", seen)
	}

	busy.Store(false)
	first, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if m := e.receive(e.caller, first); m.Type != amp.TypeCapResult {
		t.Fatalf("the retry with the same id got %s, want its CAP_RESULT", m.Type)
	}
	waitCount(t, &released, 1, "admissions released after the handler returned")
	again, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if !bytes.Equal(again, first) {
		t.Fatal("a third copy got another reply than the recorded one")
	}
	if runs.Load() != 1 || admitted.Load() != 1 {
		t.Fatalf("%d runs, %d admissions for one id, want 1 and 1", runs.Load(), admitted.Load())
	}
}

// TestAdmitReleasedOnlyWhenDetachedHandlerReturnsPastDeadline: a handler
// that ignores its context outlives its invocation's 5003 (threat: an
// admission released with the reply would let the embedder's bound count
// a process that still runs, so hung handlers pile up past it). The
// release comes when the handler returns, not at the deadline (AGENT-25).
func TestAdmitReleasedOnlyWhenDetachedHandlerReturnsPastDeadline(t *testing.T) {
	const id = "org.agentries.code-review:2.1.0"
	unblock := make(chan struct{})
	var released atomic.Int64
	e := newEnv(t, withMemoryLedger(), withHandler(id, func(ctx context.Context, p any) (any, error) {
		<-unblock // ignores its context
		return nil, nil
	}), withConfig(func(c *Config) {
		c.Admit = func(context.Context, Admission) (func(), error) { return func() { released.Add(1) }, nil }
	}))
	defer func() {
		select {
		case <-unblock:
		default:
			close(unblock)
		}
	}()
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeWithin(t, 30))
	raw, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if r := resultOf(t, e.receive(e.caller, raw)); r.Error == nil || r.Error.Code != amp.CodeTimeout {
		t.Fatalf("got %+v, want a 5003 result", r)
	}
	time.Sleep(50 * time.Millisecond)
	if n := released.Load(); n != 0 {
		t.Fatalf("the admission was released %d times while its handler still runs", n)
	}
	close(unblock)
	waitCount(t, &released, 1, "admissions released once the handler returned")
}

// TestAdmitPlainErrorRefusedRetryablyNotRecorded: an embedder's hook
// returning an error that is not a retryable *amp.Error (a plain error, a
// final code) must still refuse before anything runs, and never as a
// recorded final result that a retry would get again (threat: a hook's
// bug turning a busy moment into a permanent answer for that id). It is
// 5004 not_admitted, retryable (AGENT-25).
func TestAdmitPlainErrorRefusedRetryablyNotRecorded(t *testing.T) {
	for _, refusal := range []error{errors.New("pool closed"), amp.NewError(amp.CodeUnauthorized, "no")} {
		var runs atomic.Int64
		e := newEnv(t, withMemoryLedger(), withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
			runs.Add(1)
			return nil, nil
		}), withConfig(func(c *Config) {
			c.Admit = func(context.Context, Admission) (func(), error) { return nil, refusal }
		}))
		_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeWithin(t, 5000))
		raw, err := e.agent.Handle(context.Background(), msg)
		must(t, err)
		b := errorOf(t, e.receive(e.caller, raw))
		if b.Code != amp.CodeOverloaded || b.Retry == nil || !*b.Retry || admissionReason(t, b) != string(ErrNotAdmitted) {
			t.Fatalf("%v: refused with %d %q reason %q, want a retryable 5004 not_admitted", refusal, b.Code, b.Message, admissionReason(t, b))
		}
		if runs.Load() != 0 {
			t.Fatalf("%v: the handler ran", refusal)
		}
	}
}
