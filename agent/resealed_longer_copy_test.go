package agent

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/ampbundle/ampbundle/amp"
)

// The threat of docs/SPEC-DECISIONS.md AGENT-14: the id pins a message's
// ts, not its ttl, and the ledger kept an entry until the expiry of the
// copy that created it. Whoever holds the sender's key seals a second
// copy of the same id with a longer ttl and replays it once the first
// entry is swept: the handler ran again. Bounds.ReplayHorizon closes it.

const reviewCap = "org.agentries.code-review:2.1.0"

// withReplayHorizon sets Bounds.ReplayHorizon.
func withReplayHorizon(h time.Duration) envOption {
	return withConfig(func(c *Config) { c.ReplayHorizon = h })
}

// reseal is a copy of m with its ts moved by shift (within the ±1 s the
// id allows) and the ttl given, signed again by id: what the sender's key
// can make of one message id.
func reseal(t *testing.T, id amp.Identity, m *amp.Message, shift, ttl time.Duration) []byte {
	t.Helper()
	c := *m
	c.TS = uint64(int64(m.TS) + shift.Milliseconds())
	c.TTL = uint64(ttl.Milliseconds())
	must(t, amp.Sign(&c, id.SigningKey))
	return c.Encode()
}

// sweepTwice runs two sweeps, so that no expired entry is left for lack
// of a pass.
func (e *env) sweepTwice() {
	e.t.Helper()
	for range 2 {
		if _, err := e.agent.Sweep(); err != nil {
			e.t.Fatal(err)
		}
	}
}

// pastHorizonRefusal fails t unless out is the signed age refusal:
// 1003 with details.reason older_than_replay_horizon, not retryable,
// valid for RefusalTTL at most.
func (e *env) pastHorizonRefusal(t *testing.T, out []byte) {
	t.Helper()
	rep := e.receive(e.caller, out)
	eb := errorOf(t, rep)
	var d map[string]any
	if len(eb.Details) > 0 {
		must(t, amp.Unmarshal(eb.Details, &d))
	}
	if eb.Code != amp.CodeInvalidTimestamp || d["reason"] != string(errPastHorizon) {
		t.Fatalf("refusal %d %q details %v, want 1003 with reason %s", eb.Code, eb.Message, d, errPastHorizon)
	}
	if eb.Retry == nil || *eb.Retry {
		t.Fatal("the age refusal says retry: a retry of the same message cannot become younger")
	}
	if rep.TTL == 0 || rep.TTL > uint64(RefusalTTL.Milliseconds()) {
		t.Fatalf("the age refusal is valid for %d ms, want at most RefusalTTL", rep.TTL)
	}
}

// TestWithReplayHorizonAReSealedLongerCopyNeverRunsTwice: with a replay
// horizon, copy A (ttl 1 min) runs; the clock passes A's old expiry
// (ts + ttl + skew) and the ledger is swept; copy B of the same id,
// sealed again with a ttl of a day, gets A's recorded reply while the
// entry is kept and the age refusal after, never a second run. With
// H = MaxTTL nothing is refused for age: the entry outlives every copy.
func TestWithReplayHorizonAReSealedLongerCopyNeverRunsTwice(t *testing.T) {
	for _, tc := range []struct {
		name     string
		horizon  time.Duration
		refused  []bool // at each instant of the copy B replays
		instants []time.Duration
	}{
		{"horizon_1h", time.Hour, []bool{false, false, true, true}, []time.Duration{2 * time.Minute, 59 * time.Minute, time.Hour + 31*time.Second, 23 * time.Hour}},
		{"horizon_max_ttl", 7 * 24 * time.Hour, []bool{false, false, false}, []time.Duration{2 * time.Minute, 2 * time.Hour, 23*time.Hour + 59*time.Minute}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, withReplayHorizon(tc.horizon))
			a, first := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewCap, goodParams), time.Minute)
			ra, err := e.agent.Handle(context.Background(), first)
			must(t, err)
			if resultOf(t, e.receive(e.caller, ra)).Error != nil {
				t.Fatal("copy A did not run")
			}
			b := reseal(t, e.caller, a, 0, 24*time.Hour)
			for i, at := range tc.instants {
				e.clock.Add(t0.Add(at).Sub(e.clock.Now()))
				e.sweepTwice()
				out, err := e.agent.Handle(context.Background(), b)
				must(t, err)
				if tc.refused[i] {
					e.pastHorizonRefusal(t, out)
				} else if !bytes.Equal(out, ra) {
					t.Fatalf("at +%v copy B got %s, want copy A's recorded reply", at, e.receive(e.caller, out).Type)
				}
				if n := e.count(reviewCap).Load(); n != 1 {
					t.Fatalf("at +%v the handler ran %d times for one id", at, n)
				}
			}
		})
	}
}

// TestWithoutReplayHorizonAReSealedLongerCopyRunsAgainAfterTheSweep
// documents the default (H = 0, RFC 001's rule, AGENT-14): the entry of
// copy A goes at A's expiry, and copy B, the same id sealed again by the
// sender's key with a longer ttl, runs the handler a second time.
func TestWithoutReplayHorizonAReSealedLongerCopyRunsAgainAfterTheSweep(t *testing.T) {
	e := newEnv(t)
	a, first := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewCap, goodParams), time.Minute)
	_, err := e.agent.Handle(context.Background(), first)
	must(t, err)
	b := reseal(t, e.caller, a, 0, 24*time.Hour)
	e.clock.Add(2 * time.Minute)
	e.sweepTwice()
	out, err := e.agent.Handle(context.Background(), b)
	must(t, err)
	if resultOf(t, e.receive(e.caller, out)).Error != nil {
		t.Fatal("copy B was refused")
	}
	if n := e.count(reviewCap).Load(); n != 2 {
		t.Fatalf("the handler ran %d times; without a replay horizon the re-sealed copy runs again (2)", n)
	}
}

// TestReplayHorizonCoversCopiesWhoseTSDifferWithinTheIDsSecond: each
// copy's ts may be up to 1 s off the id's timestamp, so two copies differ
// by up to 2 s. Copy A sealed 1 s before the id's time, copy B 1 s after:
// B passes the age check up to 2 s after A's ts + H + skew, and must
// still find A's entry then.
func TestReplayHorizonCoversCopiesWhoseTSDifferWithinTheIDsSecond(t *testing.T) {
	const h = time.Hour
	e := newEnv(t, withReplayHorizon(h))
	m, _ := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewCap, goodParams), time.Minute)
	a := reseal(t, e.caller, m, -time.Second, time.Minute)
	ra, err := e.agent.Handle(context.Background(), a)
	must(t, err)
	b := reseal(t, e.caller, m, time.Second, 24*time.Hour)
	e.clock.Add(-time.Second + h + e.agent.cfg.MaxClockSkew + 1500*time.Millisecond)
	e.sweepTwice()
	out, err := e.agent.Handle(context.Background(), b)
	must(t, err)
	if !bytes.Equal(out, ra) {
		t.Fatalf("copy B got %s, want copy A's recorded reply", e.receive(e.caller, out).Type)
	}
	if n := e.count(reviewCap).Load(); n != 1 {
		t.Fatalf("the handler ran %d times for one id", n)
	}
}

// TestALateDeliveryOlderThanTheReplayHorizonIsRefusedWithItsReason: the
// cost of a horizon. An honest message still inside its ttl but older
// than H (a late store-and-forward delivery) is refused before the
// ledger, with its reason, unrecorded (again refused, nothing kept), alone
// or as a BATCH item; one younger than H still runs.
func TestALateDeliveryOlderThanTheReplayHorizonIsRefusedWithItsReason(t *testing.T) {
	e := newEnv(t, withReplayHorizon(time.Hour))
	_, late := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewCap, goodParams), 24*time.Hour)
	_, lateItem := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewCap, goodParams), 24*time.Hour)
	e.clock.Add(2 * time.Hour)
	for range 2 {
		out, err := e.agent.Handle(context.Background(), late)
		must(t, err)
		e.pastHorizonRefusal(t, out)
	}
	_, container := e.batchOf(e.caller, lateItem)
	_, items, _ := e.batchReplies(e.caller, container)
	if len(items) != 1 {
		t.Fatalf("%d item replies, want 1", len(items))
	}
	eb := errorOf(t, items[0])
	var d map[string]any
	must(t, amp.Unmarshal(eb.Details, &d))
	if eb.Code != amp.CodeInvalidTimestamp || d["reason"] != string(errPastHorizon) {
		t.Fatalf("late batch item: %d %v, want 1003 %s", eb.Code, d, errPastHorizon)
	}
	if n, u := e.count(reviewCap).Load(), e.agent.Ledger().Usage().Entries; n != 0 || u != 0 {
		t.Fatalf("late deliveries ran %d times and left %d ledger entries, want none", n, u)
	}
	_, young := e.sealTTL(e.caller, amp.TypeCapInvoke, invokeBody(t, reviewCap, goodParams), 24*time.Hour)
	e.clock.Add(59 * time.Minute)
	out, err := e.agent.Handle(context.Background(), young)
	must(t, err)
	if resultOf(t, e.receive(e.caller, out)).Error != nil || e.count(reviewCap).Load() != 1 {
		t.Fatal("a message younger than the replay horizon did not run")
	}
}

// TestReplayHorizonKeepsAKeyedLocalCallsEntry: InvokeLocal's entries take
// the same expiry: with H longer than LocalKeyTTL, a keyed call retried
// after LocalKeyTTL and a sweep does not run its handler again, and gets
// the first call's reply: a keyed call is signed for the longer of
// LocalKeyTTL and H, so the recorded reply has not lapsed.
func TestReplayHorizonKeepsAKeyedLocalCallsEntry(t *testing.T) {
	e := newEnv(t, withReplayHorizon(48*time.Hour))
	const id = "org.agentries.translate:1.0.0"
	call := localTranslate(t, e, "key-1")
	first, err := e.agent.InvokeLocal(context.Background(), call)
	must(t, err)
	e.clock.Add(LocalKeyTTL + time.Hour)
	e.sweepTwice()
	again, err := e.agent.InvokeLocal(context.Background(), call)
	if n := e.count(id).Load(); n != 1 {
		t.Fatalf("the keyed call ran %d times within the replay horizon (%v)", n, err)
	}
	if err != nil || again.Type != amp.TypeCapResult || !bytes.Equal(again.Reply, first.Reply) {
		t.Fatalf("a keyed retry within the replay horizon got %v (%v), not the first call's recorded reply", again.Type, err)
	}
}

// TestReplayHorizonIsClampedLikeTheOtherBounds: a negative horizon is the
// default (0, RFC 001's rule) as every negative bound is, one over MaxTTL
// is MaxTTL (the retention rule of AGENT-14), as DefaultTimeout is clamped to
// MaxTimeout.
func TestReplayHorizonIsClampedLikeTheOtherBounds(t *testing.T) {
	for _, tc := range []struct{ in, maxTTL, want time.Duration }{
		{0, 0, 0},
		{-time.Hour, 0, 0},
		{time.Hour, 0, time.Hour},
		{30 * 24 * time.Hour, 0, 7 * 24 * time.Hour},
		{48 * time.Hour, 24 * time.Hour, 24 * time.Hour},
	} {
		if got := (Bounds{ReplayHorizon: tc.in, MaxTTL: tc.maxTTL}).WithDefaults().ReplayHorizon; got != tc.want {
			t.Errorf("ReplayHorizon %v (MaxTTL %v) became %v, want %v", tc.in, tc.maxTTL, got, tc.want)
		}
	}
}
