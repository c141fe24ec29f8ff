package agent

import (
	"bytes"
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/ampbundle/ampbundle/agent/ledger"
	"github.com/ampbundle/ampbundle/amp"
	"github.com/ampbundle/ampbundle/capability"
	"github.com/ampbundle/ampbundle/resolver"
)

// TestResultOverItsReservationIsNotRetryableAndReplaysTheSameReply: a
// result larger than its capability's largest result (the default,
// 256 KiB) is answered by a final CAP_RESULT error 5001 result_too_large
// naming the limit, recorded durably: the same message sent again, also
// after a restart, gets the same bytes and the handler never runs again.
// Also for a result just under the limit whose reply is over it (its
// envelope). (Threat, review of issue 29 item 2, finding 4: a 300 KiB
// result ran its handler 3 times for 3 new message ids and delivered 0
// results, answered 5004, which invites a retry that can never succeed and
// whose new id runs the handler's side effects again.)
func TestResultOverItsReservationIsNotRetryableAndReplaysTheSameReply(t *testing.T) {
	for _, tc := range []struct {
		name string
		size int // of the result's version string
	}{
		{"a result of 300 KiB", 300 << 10},
		{"a result under 256 KiB whose reply is over it", ledger.DefaultReplyReserve - 64},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var runs atomic.Int64
			e := newEnv(t, withHandler(roomCapability, func(ctx context.Context, p any) (any, error) {
				runs.Add(1)
				return bigResult(tc.size), nil
			}))
			_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, roomCapability, goodParams))
			first, err := e.agent.Handle(context.Background(), msg)
			must(t, err)
			reply := e.receive(e.caller, first)
			if reply.Type != amp.TypeCapResult {
				t.Fatalf("answered %s, want a CAP_RESULT (the handler ran)", reply.Type.Name())
			}
			res := resultOf(t, reply)
			if res.Status != capability.StatusError || res.Error == nil {
				t.Fatalf("a result over its limit was sent (%d bytes)", len(first))
			}
			if res.Error.Code != amp.CodeInternalError || res.Error.Name != string(ErrResultTooLarge) {
				t.Fatalf("answered %d %s, want the final 5001 %s (never 5004, which invites a retry)", res.Error.Code, res.Error.Name, ErrResultTooLarge)
			}
			var details map[string]int64
			if err := amp.Unmarshal(res.Error.Details, &details); err != nil || details["max_result_bytes"] != ledger.DefaultReplyReserve {
				t.Fatalf("details %v (%v), want max_result_bytes %d", details, err, ledger.DefaultReplyReserve)
			}
			if !strings.Contains(res.Error.Message, "ran") {
				t.Fatalf("the message %q does not say the capability ran", res.Error.Message)
			}
			for i := 0; i < 3; i++ {
				again, err := e.agent.Handle(context.Background(), msg)
				must(t, err)
				if !bytes.Equal(again, first) {
					t.Fatalf("replay %d is not the recorded answer", i)
				}
			}
			// After a restart: the answer came from the durable ledger.
			e.agent.Close()
			e.store.Close()
			s, err := resolver.Open(e.path, resolver.Options{Now: e.clock.Now})
			must(t, err)
			e.store = s
			cfg := e.cfg
			cfg.Store = s
			a2, err := New(cfg)
			must(t, err)
			defer a2.Close()
			again, err := a2.Handle(context.Background(), msg)
			must(t, err)
			if !bytes.Equal(again, first) {
				t.Fatal("after a restart, the replay is not the recorded answer")
			}
			if runs.Load() != 1 {
				t.Fatalf("the handler ran %d times for one message", runs.Load())
			}
		})
	}
}

// TestMaxResultBytesPerHandlerReserved: a capability given a largest
// result of its own (Config.MaxResultBytes, serve's "max_result_bytes")
// reserves exactly that in the caller's share before its handler runs —
// a second invocation that would not fit beside it is refused 3005 before
// anything runs — and its result over the default 256 KiB is sent and
// replayed byte for byte (threat, finding 4: every capability capped at
// the one default, so a 300 KiB result could never be delivered).
func TestMaxResultBytesPerHandlerReserved(t *testing.T) {
	const max = 1 << 20
	var runs atomic.Int64
	entered, gate := make(chan struct{}, 1), make(chan struct{})
	e := newEnv(t, withHandler(roomCapability, func(ctx context.Context, p any) (any, error) {
		runs.Add(1)
		entered <- struct{}{}
		<-gate
		return bigResult(300 << 10), nil
	}), func(e *env) {
		// A share of 1.5 MiB: one 1 MiB reservation, not two.
		e.cfg.Ledger = memoryLedger(t, e.clock.Now, ledger.Limits{Budget: 64 << 20, PerCaller: 3 << 19})
		e.cfg.MaxResultBytes = map[string]int64{roomCapability: max}
	})
	_, msg := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, roomCapability, goodParams))
	done := make(chan []byte, 1)
	go func() {
		out, err := e.agent.Handle(context.Background(), msg)
		if err != nil {
			t.Error(err)
		}
		done <- out
	}()
	<-entered
	if u := e.agent.Ledger().Usage().Bytes; u < max {
		t.Fatalf("while its handler runs, the ledger accounts %d bytes, less than the capability's %d-byte largest result", u, max)
	}
	_, second := e.seal(e.caller, amp.TypeCapInvoke, invokeBody(t, roomCapability, goodParams))
	out, err := e.agent.Handle(context.Background(), second)
	must(t, err)
	if r := e.receive(e.caller, out); r.Type != amp.TypeError || errorOf(t, r).Code != amp.CodeRateLimited {
		t.Fatalf("a second 1 MiB reservation in a 1.5 MiB share was not refused 3005 (%s)", r.Type.Name())
	}
	if runs.Load() != 1 {
		t.Fatal("the refused invocation ran its handler")
	}
	close(gate)
	first := <-done
	if res := resultOf(t, e.receive(e.caller, first)); res.Status != capability.StatusSuccess || len(res.Result) < 300<<10 {
		t.Fatalf("a 300 KiB result within its capability's 1 MiB: %+v", res.Error)
	}
	again, err := e.agent.Handle(context.Background(), msg)
	must(t, err)
	if !bytes.Equal(again, first) || runs.Load() != 1 {
		t.Fatal("the replay is not the recorded result, or the handler ran again")
	}
}

// TestNewRefusesAHandlerWhoseLargestResultCannotFitAShare: New refuses a
// capability whose largest result cannot fit in one caller's share of the
// ledger (every invocation would be refused, retryably, for ever), one
// under the smallest reservation (its error answer must fit), and one set
// for a capability without a handler (a typo that would leave the real
// one on the default).
func TestNewRefusesAHandlerWhoseLargestResultCannotFitAShare(t *testing.T) {
	e := newEnv(t, withMemoryLedger())
	for name, tc := range map[string]struct {
		lim  ledger.Limits
		max  map[string]int64
		want amp.ErrName
	}{
		"larger than the share":    {ledger.Limits{PerCaller: 1 << 20}, map[string]int64{roomCapability: 1 << 20}, ErrResultExceedsShare},
		"default over the share":   {ledger.Limits{PerCaller: 1 << 20, ReplyReserve: 2 << 20}, nil, ErrResultExceedsShare},
		"under the smallest":       {ledger.Limits{}, map[string]int64{roomCapability: 100}, "misconfigured"},
		"for a capability unknown": {ledger.Limits{}, map[string]int64{"org.agentries.code-review:9.9.9": 1 << 20}, "misconfigured"},
	} {
		t.Run(name, func(t *testing.T) {
			cfg := e.cfg
			cfg.Ledger = memoryLedger(t, e.clock.Now, tc.lim)
			cfg.MaxResultBytes = tc.max
			a, err := New(cfg)
			if err == nil || a != nil || amp.NameOf(err) != tc.want {
				t.Fatalf("New: %v, want %s", err, tc.want)
			}
		})
	}
	// The largest that fits is taken.
	cfg := e.cfg
	cfg.Ledger = memoryLedger(t, e.clock.Now, ledger.Limits{PerCaller: 1 << 20})
	cfg.MaxResultBytes = map[string]int64{roomCapability: ledger.Limits{PerCaller: 1 << 20}.MaxReserve()}
	a, err := New(cfg)
	must(t, err)
	a.Close()
}
