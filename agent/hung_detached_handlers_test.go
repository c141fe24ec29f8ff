package agent

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// TestHungDetachedHandlersPileUpOnlyToTheirPrincipalsShare: one signed
// caller invokes, again and again with a short timeout_ms, a capability
// whose handler blocks regardless of its context (a stuck network call, a
// lock never released), alone or as the items of one BATCH. Each
// invocation is answered 5003 at its deadline, its ledger entry finished
// and its reservation given back, while the handler keeps running
// detached on a goroutine of its own, with what it holds. Nothing counted
// those overdue handlers: 100 invocations left 100 goroutines running,
// and a caller sending thousands exhausted the agent's memory (review
// 65). Now a principal holds at most its share of
// Bounds.MaxOverdueHandlers (256/8 = 32 by default): beyond it an
// invocation is refused before anything runs, retryably and unrecorded
// (5004 handlers_overdue, AGENT-15), so the very same message is served
// once the overdue handlers returned; another principal is served
// meanwhile.
func TestHungDetachedHandlersPileUpOnlyToTheirPrincipalsShare(t *testing.T) {
	const sent = 100
	for _, tc := range []struct {
		name string
		// send hands msgs to the agent, returning each one's verified reply.
		send func(e *env, msgs [][]byte) []*amp.Message
	}{
		{"each alone", func(e *env, msgs [][]byte) []*amp.Message {
			out := make([]*amp.Message, len(msgs))
			for i, msg := range msgs {
				raw, err := e.agent.Handle(context.Background(), msg)
				if err != nil {
					t.Fatalf("invocation %d: %v", i, err)
				}
				out[i] = e.receive(e.caller, raw)
			}
			return out
		}},
		{"in one BATCH", func(e *env, msgs [][]byte) []*amp.Message {
			_, container := e.batchOf(e.caller, msgs...)
			_, items, _ := e.batchReplies(e.caller, container)
			return items
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var started atomic.Int64
			release := make(chan struct{})
			releaseAll := sync.OnceFunc(func() { close(release) })
			defer releaseAll()
			e := newEnv(t, withMemoryLedger(), withHandler("org.agentries.code-review:2.1.0", func(ctx context.Context, p any) (any, error) {
				started.Add(1)
				<-release // ignores its context
				return nil, nil
			}), func(e *env) {
				e.cfg.Policy = append(e.cfg.Policy.(Rules), Rule{Caller: e.stranger.DID, Prefix: "org.agentries"})
			})
			msgs := make([][]byte, sent)
			for i := range msgs {
				_, msgs[i] = e.seal(e.caller, amp.TypeCapInvoke, invokeWithin(t, 2))
			}
			replies := tc.send(e, msgs)
			if len(replies) != sent {
				t.Fatalf("%d replies to %d invocations", len(replies), sent)
			}
			var refusedMsg []byte
			refused := 0
			for i, reply := range replies {
				if reply.Type == amp.TypeError {
					b := errorOf(t, reply)
					var d map[string]any
					if len(b.Details) > 0 {
						must(t, amp.Unmarshal(b.Details, &d))
					}
					if b.Code != amp.CodeOverloaded || b.Retry == nil || !*b.Retry || d["reason"] != string(ErrHandlersOverdue) {
						t.Fatalf("invocation %d refused with %d %q details %v, want a retryable 5004 with reason %s", i, b.Code, b.Message, d, ErrHandlersOverdue)
					}
					if refusedMsg == nil {
						refusedMsg = msgs[i]
					}
					refused++
					continue
				}
				if r := resultOf(t, reply); r.Error == nil || r.Error.Code != amp.CodeTimeout {
					t.Fatalf("invocation %d: %+v, want 5003 or a retryable refusal", i, r)
				}
			}
			if n := started.Load(); n > 64 || refused == 0 {
				t.Fatalf("%d of %d handlers still running past their deadline (%d refused): overdue handlers are not bounded", n, sent, refused)
			}
			if n := started.Load(); n+int64(refused) != sent {
				t.Fatalf("%d handlers started and %d refused of %d: a refused invocation ran", n, refused, sent)
			}
			// Another principal is served meanwhile (its handler overruns too).
			if _, reply := e.exchange(e.stranger, amp.TypeCapInvoke, invokeWithin(t, 2)); reply.Type != amp.TypeCapResult {
				t.Fatalf("another principal refused while the first holds its share: %+v", errorOf(t, reply))
			}
			// Once the overdue handlers return, the refused message itself
			// is served (its refusal was not recorded).
			releaseAll()
			for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
				raw, err := e.agent.Handle(context.Background(), refusedMsg)
				if err != nil {
					t.Fatal(err)
				}
				reply := e.receive(e.caller, raw)
				if reply.Type == amp.TypeCapResult {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("still refused after every overdue handler returned: %+v", errorOf(t, reply))
				}
			}
		})
	}
}
